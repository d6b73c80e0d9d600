// Behaviour of heapscope's SVG flame graphs: click a frame to zoom into
// it, click a dimmed ancestor (or Reset Zoom) to go back, search by
// regular expression to highlight frames and see their share. No external
// resources: the file works opened from disk.
(function () {
  "use strict";
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();

  // init runs once the frames are parsed: the script comes before them.
  function init() {
    var cfg = flameConfig;
    var frames = [];
    var byG = new Map();
    var gs = document.querySelectorAll("g.f");
    for (var i = 0; i < gs.length; i++) {
      var g = gs[i];
      var name = g.getAttribute("data-n");
      var f = {
        g: g,
        rect: g.querySelector("rect"),
        text: g.querySelector("text"),
        title: g.querySelector("title"),
        x: +g.getAttribute("data-x"),
        w: +g.getAttribute("data-w"),
        d: +g.getAttribute("data-d"),
        name: name,
        label: +g.getAttribute("data-d") === 0 ? "all" : shortName(name)
      };
      frames.push(f);
      byG.set(g, f);
    }
    var details = document.getElementById("details");
    var matched = document.getElementById("matched");
    var reset = document.getElementById("reset");
    var input = document.getElementById("search");
    var zoomed = null;

    function shortName(name) {
      var prefix = name;
      var b = prefix.indexOf("[");
      if (b >= 0) prefix = prefix.slice(0, b);
      return name.slice(prefix.lastIndexOf("/") + 1);
    }

    function fit(label, wpx) {
      var n = Math.floor((wpx - 6) / (cfg.fontSize * 0.6));
      if (n < 3) return "";
      if (label.length <= n) return label;
      return label.slice(0, n - 2) + "..";
    }

    function place(f, x, w) {
      var left = cfg.pad + x * cfg.drawWidth;
      var wpx = w * cfg.drawWidth;
      f.rect.setAttribute("x", left.toFixed(2));
      f.rect.setAttribute("width", wpx.toFixed(2));
      f.text.setAttribute("x", (left + 3).toFixed(2));
      f.text.textContent = fit(f.label, wpx);
    }

    var eps = 1e-9;

    // zoom shows frame z across the full width: its descendants scaled to
    // it, its ancestors full width and dimmed, everything else hidden.
    function zoom(z) {
      if (z.d === 0) {
        unzoom();
        return;
      }
      zoomed = z;
      reset.classList.remove("hidden");
      for (var i = 0; i < frames.length; i++) {
        var f = frames[i];
        f.g.classList.remove("parent");
        if (f.d >= z.d && f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps) {
          f.g.style.display = "";
          place(f, (f.x - z.x) / z.w, f.w / z.w);
        } else if (f.d < z.d && f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps) {
          f.g.style.display = "";
          f.g.classList.add("parent");
          place(f, 0, 1);
        } else {
          f.g.style.display = "none";
        }
      }
    }

    function unzoom() {
      zoomed = null;
      reset.classList.add("hidden");
      for (var i = 0; i < frames.length; i++) {
        var f = frames[i];
        f.g.classList.remove("parent");
        f.g.style.display = "";
        place(f, f.x, f.w);
      }
    }

    function describe(f) {
      return f.title.textContent.split("\n").join("  ·  ");
    }

    function pattern(term) {
      // Smart case: a term in lower case matches any case.
      var flags = term === term.toLowerCase() ? "i" : "";
      try {
        return new RegExp(term, flags);
      } catch (e) {
        return new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), flags);
      }
    }

    // search highlights the frames whose full name matches and shows the
    // share of the total they cover, counting nested matches once.
    function search(term) {
      var spans = [];
      var re = term ? pattern(term) : null;
      for (var i = 0; i < frames.length; i++) {
        var f = frames[i];
        var hit = re !== null && f.d > 0 && re.test(f.name);
        f.g.classList.toggle("match", hit);
        if (hit) spans.push([f.x, f.x + f.w]);
      }
      if (re === null) {
        matched.textContent = "";
        return;
      }
      spans.sort(function (a, b) { return a[0] - b[0]; });
      var covered = 0, end = -1;
      for (var j = 0; j < spans.length; j++) {
        var s = spans[j];
        if (s[0] >= end) {
          covered += s[1] - s[0];
          end = s[1];
        } else if (s[1] > end) {
          covered += s[1] - end;
          end = s[1];
        }
      }
      matched.textContent = "Matched: " + (covered * 100).toFixed(2) + "%";
      matched.setAttribute("data-share", covered.toFixed(6));
    }

    document.addEventListener("click", function (ev) {
      var g = ev.target.closest ? ev.target.closest("g.f") : null;
      if (g && byG.has(g)) zoom(byG.get(g));
    });
    document.addEventListener("mouseover", function (ev) {
      var g = ev.target.closest ? ev.target.closest("g.f") : null;
      if (g && byG.has(g)) details.textContent = describe(byG.get(g));
    });
    reset.addEventListener("click", unzoom);
    input.addEventListener("input", function () { search(input.value); });
    input.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") {
        input.value = "";
        search("");
      }
    });
    document.addEventListener("keydown", function (ev) {
      if ((ev.ctrlKey || ev.metaKey) && ev.key === "f") {
        ev.preventDefault();
        input.focus();
      }
    });
  }
})();
