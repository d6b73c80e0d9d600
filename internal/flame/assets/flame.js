// heapscope's interactive flame graphs: every element of class "hsflame"
// holding its JSON data (script.hsflame-data) becomes a widget drawn on a
// canvas, with zoom, search, tooltips, reset, a flame/icicle toggle and
// switches between views and sample types. No external resources.
//
// window.heapscopeFlame[id] exposes each widget's state and drawn frames,
// for tests and for pages that embed widgets.
(function () {
  "use strict";
  var ROW = 18;
  var FONT = "12px ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace";
  var KINDS = ["application", "standard library", "runtime", "dependency", "unknown"];
  var registry = (window.heapscopeFlame = window.heapscopeFlame || {});

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function shortName(name) {
    var prefix = name;
    var b = prefix.indexOf("[");
    if (b >= 0) prefix = prefix.slice(0, b);
    return name.slice(prefix.lastIndexOf("/") + 1);
  }

  // nameHash is FNV-1a over the UTF-8 bytes, in [0, 1): the Go side uses
  // the same, so SVG and HTML share colours.
  var encoder = new TextEncoder();
  function nameHash(s) {
    var h = 0x811c9dc5;
    var bytes = encoder.encode(s);
    for (var i = 0; i < bytes.length; i++) {
      h ^= bytes[i];
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h / 4294967296;
  }

  function rgb(r, g, b) {
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  function kindColour(kind, name) {
    var v = nameHash(name);
    function mix(lo, hi) { return Math.floor(lo + v * (hi - lo)); }
    switch (kind) {
      case 1: return rgb(mix(215, 240), mix(190, 220), mix(60, 110));
      case 2: return rgb(mix(165, 195), mix(150, 180), mix(215, 240));
      case 3: return rgb(mix(110, 150), mix(190, 220), mix(110, 140));
      case 4: return rgb(mix(180, 200), mix(180, 200), mix(180, 200));
    }
    return rgb(mix(225, 250), mix(100, 170), mix(40, 80));
  }

  var NEUTRAL = [222, 222, 222], GREW = [225, 45, 45], SHRANK = [45, 95, 225];
  function changeColour(c) {
    var to = GREW;
    if (c < 0) { to = SHRANK; c = -c; }
    c = Math.min(c, 1);
    function blend(i) { return Math.round(NEUTRAL[i] + c * (to[i] - NEUTRAL[i])); }
    return rgb(blend(0), blend(1), blend(2));
  }

  function trim(v, decimals) {
    var s = v.toFixed(decimals);
    if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }
  function three(v) {
    if (v >= 100) return trim(v, 0);
    if (v >= 10) return trim(v, 1);
    return trim(v, 2);
  }
  function formatValue(v, unit) {
    var sign = "";
    if (v < 0) { sign = "-"; v = -v; }
    if (unit === "bytes") {
      var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], i = 0;
      while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
      return sign + (i === 0 ? trim(v, 0) : three(v)) + " " + units[i];
    }
    if (unit === "nanoseconds") {
      if (v >= 1e9) return sign + three(v / 1e9) + " s";
      if (v >= 1e6) return sign + three(v / 1e6) + " ms";
      if (v >= 1e3) return sign + three(v / 1e3) + " µs";
      return sign + trim(v, 0) + " ns";
    }
    if (v === Math.trunc(v)) return sign + v.toLocaleString("en-US");
    return sign + three(v);
  }
  function formatShare(s) {
    if (!isFinite(s)) return "–";
    return (s * 100).toFixed(2) + "%";
  }

  // prepare rebuilds parents and subtree ends from the depth-first depths.
  function prepare(view) {
    var depth = view.nodes.depth, n = depth.length;
    var parent = new Int32Array(n), end = new Int32Array(n), stack = [];
    for (var i = 0; i < n; i++) {
      while (stack.length > depth[i]) end[stack.pop()] = i;
      parent[i] = stack.length ? stack[stack.length - 1] : -1;
      stack.push(i);
    }
    while (stack.length) end[stack.pop()] = n;
    view.n = n;
    view.parent = parent;
    view.end = end;
    view.short = view.funcs.name.map(shortName);
    view.fill = view.funcs.name.map(function (name, i) { return kindColour(view.funcs.kind[i], name); });
  }

  function Widget(root) {
    var data = JSON.parse(root.querySelector("script.hsflame-data").textContent);
    var views = data.views;
    views.forEach(prepare);
    var state = { view: 0, type: views[0].default, zoom: 0, icicle: !!data.icicle, term: "" };
    var x = null, w = null, next = null;
    var drawn = [], rows = [], maxDepth = 0, width = 0;
    var matchFn = null, matchedShare = 0, matchedValue = 0;
    var hover = -1;

    // The controls.
    var bar = el("div", "hsflame-bar");
    if (data.title) bar.appendChild(el("span", "hsflame-title", data.title));
    var viewSel = null, typeSel = el("select", "hsflame-type");
    if (views.length > 1) {
      viewSel = el("select", "hsflame-view");
      views.forEach(function (v, i) {
        var o = el("option", "", v.name);
        o.value = i;
        viewSel.appendChild(o);
      });
      bar.appendChild(viewSel);
    }
    bar.appendChild(typeSel);
    var resetBtn = el("button", "hsflame-reset", "Reset zoom");
    var orientBtn = el("button", "hsflame-orient", "");
    var search = el("input", "hsflame-search");
    search.type = "search";
    search.placeholder = "Search (regexp)";
    search.autocomplete = "off";
    var matched = el("span", "hsflame-matched", "");
    bar.appendChild(resetBtn);
    bar.appendChild(orientBtn);
    bar.appendChild(search);
    bar.appendChild(matched);
    var legend = el("div", "hsflame-legend");
    var wrap = el("div", "hsflame-wrap");
    var canvas = el("canvas", "hsflame-canvas");
    wrap.appendChild(canvas);
    var tip = el("div", "hsflame-tip");
    tip.hidden = true;
    var details = el("div", "hsflame-details", "\u00a0");
    root.appendChild(bar);
    root.appendChild(legend);
    root.appendChild(wrap);
    root.appendChild(details);
    root.appendChild(tip);
    var ctx = canvas.getContext("2d");

    function view() { return views[state.view]; }

    function fillTypes() {
      var v = view();
      typeSel.textContent = "";
      v.types.forEach(function (t, i) {
        var o = el("option", "", t.name);
        o.value = i;
        typeSel.appendChild(o);
      });
      typeSel.value = state.type;
      typeSel.hidden = v.types.length < 2;
    }

    function fillLegend() {
      var v = view();
      legend.textContent = "";
      var entries = [];
      if (v.diff) {
        entries = [["grew", changeColour(0.8)], ["shrank", changeColour(-0.8)], ["unchanged", changeColour(0)]];
      } else {
        var seen = {};
        v.funcs.kind.forEach(function (k) { seen[k] = true; });
        [0, 3, 1, 2, 4].forEach(function (k) {
          if (seen[k]) entries.push([KINDS[k], kindColour(k, "")]);
        });
      }
      entries.forEach(function (e) {
        var item = el("span", "hsflame-key");
        var sw = el("span", "hsflame-swatch");
        sw.style.background = e[1];
        item.appendChild(sw);
        item.appendChild(document.createTextNode(e[0]));
        legend.appendChild(item);
      });
      if (v.diff) {
        var note = "coloured by " + v.diff.by + " change";
        if (v.diff.vanished) note += "; the base profile's shape: frames that vanished";
        legend.appendChild(el("span", "hsflame-note", note));
      }
      var t = v.types[state.type];
      if (v.diff) {
        // The values of a differential view are normalised (per request,
        // per second): state the root's as the tooltips do, not the raw
        // total of the profile.
        var unit = v.diff.perUnit ? "/" + v.diff.perUnit : "";
        legend.appendChild(el("span", "hsflame-note", t.name + ", total before " +
          formatValue(v.diff.before[state.type][0], t.unit) + unit + " → after " +
          formatValue(v.diff.after[state.type][0], t.unit) + unit));
      } else {
        legend.appendChild(el("span", "hsflame-note", t.name + ", total " + formatValue(v.total[state.type][0], t.unit)));
      }
    }

    // shown returns the values of the view's frames as the tooltips state
    // them, and their unit suffix: normalised in a differential view (the
    // base profile's in the vanished one), raw otherwise.
    function shown() {
      var v = view();
      if (!v.diff) return { values: v.total[state.type], unit: "" };
      return {
        values: (v.diff.vanished ? v.diff.before : v.diff.after)[state.type],
        unit: v.diff.perUnit ? "/" + v.diff.perUnit : ""
      };
    }

    function name(i) {
      var v = view(), f = v.nodes.fn[i];
      return f < 0 ? "all" : v.funcs.name[f];
    }

    // layout places the zoomed frame and its descendants across the width
    // and its ancestors full width; frames under 0.3 pixel are skipped with
    // their descendants.
    function layout() {
      var v = view(), tot = v.total[state.type], z = state.zoom;
      width = Math.max(wrap.clientWidth, 100);
      if (!x || x.length !== v.n) {
        x = new Float64Array(v.n);
        w = new Float64Array(v.n);
        next = new Float64Array(v.n);
      }
      drawn = [];
      var anc = [];
      for (var a = v.parent[z]; a >= 0; a = v.parent[a]) anc.push(a);
      for (var k = anc.length - 1; k >= 0; k--) {
        x[anc[k]] = 0;
        w[anc[k]] = 1;
        drawn.push(anc[k]);
      }
      x[z] = 0;
      w[z] = 1;
      next[z] = 0;
      drawn.push(z);
      var zt = tot[z];
      if (zt > 0) {
        for (var i = z + 1; i < v.end[z]; i++) {
          var p = v.parent[i], val = tot[i], wi = val / zt;
          if (val <= 0 || wi * width < 0.3) {
            if (val > 0) next[p] += wi;
            i = v.end[i] - 1;
            continue;
          }
          x[i] = x[p] + next[p];
          w[i] = wi;
          next[p] += wi;
          next[i] = 0;
          drawn.push(i);
        }
      }
      maxDepth = 0;
      rows = [];
      for (var j = 0; j < drawn.length; j++) {
        var d = v.nodes.depth[drawn[j]];
        if (d > maxDepth) maxDepth = d;
        (rows[d] = rows[d] || []).push(drawn[j]);
      }
    }

    function rowY(d) {
      return (state.icicle ? d : maxDepth - d) * ROW;
    }

    function isMatch(i) {
      var f = view().nodes.fn[i];
      return matchFn !== null && f >= 0 && matchFn[f] === 1;
    }

    function draw() {
      var v = view(), dpr = window.devicePixelRatio || 1;
      var height = (maxDepth + 1) * ROW;
      canvas.style.width = width + "px";
      canvas.style.height = height + "px";
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(height * dpr);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, width, height);
      ctx.font = FONT;
      ctx.textBaseline = "middle";
      var charW = ctx.measureText("m").width || 7.2;
      var change = v.diff ? v.diff.change[state.type] : null;
      var depth = v.nodes.depth, zd = depth[state.zoom];
      for (var j = 0; j < drawn.length; j++) {
        var i = drawn[j];
        var left = x[i] * width, wpx = w[i] * width, y = rowY(depth[i]);
        var fill;
        if (isMatch(i)) fill = "rgb(230,0,230)";
        else if (change) fill = changeColour(change[i]);
        else if (v.nodes.fn[i] < 0) fill = "rgb(200,200,200)";
        else fill = v.fill[v.nodes.fn[i]];
        ctx.globalAlpha = depth[i] < zd ? 0.55 : 1;
        ctx.fillStyle = fill;
        ctx.fillRect(left, y, Math.max(wpx - (wpx > 2 ? 1 : 0), 0.5), ROW - 1);
        if (i === hover) {
          ctx.strokeStyle = "#000";
          ctx.lineWidth = 1;
          ctx.strokeRect(left + 0.5, y + 0.5, Math.max(wpx - 1, 0.5), ROW - 2);
        }
        var chars = Math.floor((wpx - 6) / charW);
        if (chars >= 3) {
          var label = v.nodes.fn[i] < 0 ? "all" : v.short[v.nodes.fn[i]];
          if (label.length > chars) label = label.slice(0, chars - 2) + "..";
          ctx.fillStyle = "#000";
          ctx.fillText(label, left + 3, y + ROW / 2);
        }
      }
      ctx.globalAlpha = 1;
      resetBtn.disabled = state.zoom === 0;
      orientBtn.textContent = state.icicle ? "Flame" : "Icicle";
    }

    function render() {
      layout();
      draw();
    }

    // hit returns the frame under a point of the canvas, or -1.
    function hit(px, py) {
      var row = Math.floor(py / ROW);
      var d = state.icicle ? row : maxDepth - row;
      var list = rows[d];
      if (!list) return -1;
      var fx = px / width, lo = 0, hi = list.length - 1;
      while (lo <= hi) {
        var mid = (lo + hi) >> 1, i = list[mid];
        if (fx < x[i]) hi = mid - 1;
        else if (fx >= x[i] + w[i]) lo = mid + 1;
        else return i;
      }
      return -1;
    }

    function describe(i) {
      var v = view(), t = v.types[state.type], tot = v.total[state.type];
      var lines = [];
      var f = v.nodes.fn[i];
      if (f >= 0) {
        var loc = v.funcs.file[f] || "?";
        if (v.nodes.line[i] > 0) loc += ":" + v.nodes.line[i];
        if (v.nodes.lines[i] > 1) loc += " (+" + (v.nodes.lines[i] - 1) + " lines)";
        lines.push(v.funcs.name[f]);
        lines.push(loc + " · " + KINDS[v.funcs.kind[f]]);
      }
      if (v.diff) {
        var unit = v.diff.perUnit ? "/" + v.diff.perUnit : "";
        var b = v.diff.before[state.type][i], a = v.diff.after[state.type][i], dlt = a - b;
        var s = "before " + formatValue(b, t.unit) + unit + " → after " + formatValue(a, t.unit) + unit +
          ": " + (dlt >= 0 ? "+" : "") + formatValue(dlt, t.unit) + unit;
        if (b !== 0) s += " (" + (dlt >= 0 ? "+" : "") + (dlt / Math.abs(b) * 100).toFixed(1) + "%)";
        lines.push(s);
      } else {
        var s2 = formatValue(tot[i], t.unit) + " (" + formatShare(tot[i] / tot[0]) + " of total";
        if (state.zoom !== 0 && v.nodes.depth[i] >= v.nodes.depth[state.zoom]) {
          s2 += ", " + formatShare(tot[i] / tot[state.zoom]) + " of " + name(state.zoom);
        }
        s2 += ")";
        var self = v.self[state.type][i];
        if (self !== 0 && i !== 0) s2 += ", self " + formatValue(self, t.unit);
        lines.push(s2);
      }
      return { title: f >= 0 ? v.short[f] : "all", lines: lines };
    }

    function showTip(i, ev) {
      var info = describe(i);
      tip.textContent = "";
      tip.appendChild(el("b", "", info.title));
      info.lines.forEach(function (l) {
        tip.appendChild(el("div", "", l));
      });
      tip.hidden = false;
      var r = root.getBoundingClientRect();
      var left = ev.clientX - r.left + 14, top = ev.clientY - r.top + 14;
      if (left + tip.offsetWidth > r.width) left = Math.max(0, ev.clientX - r.left - tip.offsetWidth - 14);
      tip.style.left = left + "px";
      tip.style.top = top + "px";
      details.textContent = info.title + " · " + info.lines.join(" · ");
    }

    function zoom(i) {
      state.zoom = i;
      hover = -1;
      render();
    }

    function pattern(term) {
      var flags = term === term.toLowerCase() ? "i" : "";
      try {
        return new RegExp(term, flags);
      } catch (e) {
        return new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), flags);
      }
    }

    // find marks the functions matching term and sums the value of the
    // matching frames, nested matches counted once.
    function find(term) {
      state.term = term;
      var v = view();
      if (!term) {
        matchFn = null;
        matched.textContent = "";
        draw();
        return;
      }
      var re = pattern(term);
      matchFn = new Uint8Array(v.funcs.name.length);
      for (var f = 0; f < matchFn.length; f++) matchFn[f] = re.test(v.funcs.name[f]) ? 1 : 0;
      var tot = v.total[state.type], sum = 0, vals = shown(), value = 0;
      for (var i = 1; i < v.n; i++) {
        if (matchFn[v.nodes.fn[i]] === 1) {
          if (tot[i] > 0) {
            sum += tot[i];
            value += vals.values[i];
          }
          i = v.end[i] - 1;
        }
      }
      matchedValue = value;
      matchedShare = tot[0] > 0 ? sum / tot[0] : 0;
      matched.textContent = "Matched: " + formatShare(matchedShare) + " (" + formatValue(value, v.types[state.type].unit) + vals.unit + ")";
      draw();
    }

    function setView(i) {
      var old = view().types[state.type].name;
      state.view = i;
      state.zoom = 0;
      var v = view();
      state.type = v.default;
      v.types.forEach(function (t, k) { if (t.name === old) state.type = k; });
      x = null;
      fillTypes();
      fillLegend();
      render();
      find(state.term);
    }

    canvas.addEventListener("mousemove", function (ev) {
      var r = canvas.getBoundingClientRect();
      var i = hit(ev.clientX - r.left, ev.clientY - r.top);
      if (i !== hover) {
        hover = i;
        draw();
      }
      if (i < 0) {
        tip.hidden = true;
        return;
      }
      showTip(i, ev);
    });
    canvas.addEventListener("mouseleave", function () {
      tip.hidden = true;
      if (hover >= 0) {
        hover = -1;
        draw();
      }
    });
    canvas.addEventListener("click", function (ev) {
      var r = canvas.getBoundingClientRect();
      var i = hit(ev.clientX - r.left, ev.clientY - r.top);
      if (i >= 0 && i !== state.zoom) zoom(i);
    });
    resetBtn.addEventListener("click", function () { zoom(0); });
    orientBtn.addEventListener("click", function () {
      state.icicle = !state.icicle;
      draw();
    });
    typeSel.addEventListener("change", function () {
      state.type = +typeSel.value;
      if (view().total[state.type][state.zoom] <= 0) state.zoom = 0;
      fillLegend();
      render();
      find(state.term);
    });
    if (viewSel) viewSel.addEventListener("change", function () { setView(+viewSel.value); });
    search.addEventListener("input", function () { find(search.value); });
    search.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") {
        search.value = "";
        find("");
      }
    });
    var resizeTimer = 0;
    window.addEventListener("resize", function () {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(function () {
        if (wrap.clientWidth !== width) render();
      }, 50);
    });

    fillTypes();
    fillLegend();
    render();

    registry[root.id] = {
      state: function () {
        return {
          view: views[state.view].name, type: view().types[state.type].name, zoom: state.zoom,
          zoomName: name(state.zoom), icicle: state.icicle, matchedShare: matchedShare,
          matchedValue: matchedValue, width: width, height: (maxDepth + 1) * ROW
        };
      },
      // frames lists the drawn frames in canvas pixels, the zoomed
      // frame's ancestors included.
      frames: function () {
        var v = view();
        return drawn.map(function (i) {
          return {
            index: i, name: name(i), depth: v.nodes.depth[i], parent: v.parent[i],
            x: x[i] * width, width: w[i] * width, y: rowY(v.nodes.depth[i]), height: ROW - 1
          };
        });
      },
      canvas: canvas,
      zoom: zoom,
      search: find
    };
  }

  function start() {
    var roots = document.querySelectorAll(".hsflame");
    for (var i = 0; i < roots.length; i++) {
      if (roots[i].getAttribute("data-ready")) continue;
      roots[i].setAttribute("data-ready", "1");
      try {
        Widget(roots[i]);
      } catch (e) {
        roots[i].appendChild(el("p", "hsflame-error", "This flame graph could not be drawn: " + e));
      }
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
