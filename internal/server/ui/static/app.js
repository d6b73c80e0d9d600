// heapscope's timeline pages: drag across a chart to select a range of
// time; the selection becomes links to the merged flame graph of the
// range, and, with a second selection made with shift held, to the
// comparison of the two. The state is in the links' URLs, so a page
// reached through them can be shared.
"use strict";

(function () {
  var figures = document.querySelectorAll("figure.timeline");
  if (!figures.length) {
    return;
  }
  var ranges = []; // [{from, to}] in Unix seconds, at most two

  function iso(sec) {
    return new Date(sec * 1000).toISOString();
  }

  function query(params) {
    return Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    }).join("&");
  }

  function show(fig) {
    var box = document.getElementById("selection");
    var target = fig.dataset.target;
    var type = fig.dataset.type;
    box.hidden = false;
    document.getElementById("selection-a").textContent = "A: " + iso(ranges[0].from) + " – " + iso(ranges[0].to);
    var flame = document.getElementById("flame-link");
    var range = query({target: target, type: type, from: iso(ranges[0].from), to: iso(ranges[0].to)});
    flame.href = "/flame?" + range;
    document.getElementById("pprof-link").href = "/merged?" + range;
    var compare = document.getElementById("compare-link");
    var b = document.getElementById("selection-b");
    if (ranges.length === 2) {
      b.textContent = "B: " + iso(ranges[1].from) + " – " + iso(ranges[1].to);
      compare.hidden = false;
      compare.href = "/compare?" + query({
        target: target, type: type,
        base_from: iso(ranges[0].from), base_to: iso(ranges[0].to),
        from: iso(ranges[1].from), to: iso(ranges[1].to)
      });
    } else {
      b.textContent = "";
      compare.hidden = true;
    }
  }

  figures.forEach(function (fig) {
    var svg = fig.querySelector("svg");
    var from = Number(fig.dataset.from), to = Number(fig.dataset.to);
    var left = Number(fig.dataset.left), right = Number(fig.dataset.right), width = Number(fig.dataset.width);
    var start = null, brush = null;

    // timeAt maps a pointer's x in the figure to a time on the chart's axis.
    function timeAt(clientX) {
      var r = svg.getBoundingClientRect();
      var x = (clientX - r.left) * width / r.width;
      var f = Math.min(1, Math.max(0, (x - left) / (right - left)));
      return from + f * (to - from);
    }
    function place(el, a, b) {
      var r = svg.getBoundingClientRect(), scale = r.width / width;
      var xa = (left + (Math.min(a, b) - from) / (to - from) * (right - left)) * scale;
      var xb = (left + (Math.max(a, b) - from) / (to - from) * (right - left)) * scale;
      el.style.left = xa + "px";
      el.style.width = Math.max(1, xb - xa) + "px";
    }
    fig.addEventListener("mousedown", function (e) {
      start = timeAt(e.clientX);
      var second = e.shiftKey && ranges.length >= 1;
      if (!second) {
        ranges = [];
        document.querySelectorAll(".brush").forEach(function (el) { el.remove(); });
      } else if (ranges.length === 2) {
        ranges.pop();
        document.querySelectorAll(".brush.b").forEach(function (el) { el.remove(); });
      }
      brush = document.createElement("div");
      brush.className = second ? "brush b" : "brush";
      fig.appendChild(brush);
      place(brush, start, start);
      e.preventDefault();
    });
    fig.addEventListener("mousemove", function (e) {
      if (start !== null) {
        place(brush, start, timeAt(e.clientX));
      }
    });
    window.addEventListener("mouseup", function (e) {
      if (start === null) {
        return;
      }
      var end = timeAt(e.clientX);
      var a = Math.min(start, end), b = Math.max(start, end);
      start = null;
      if (b - a < (to - from) / 1000) {
        brush.remove();
        return;
      }
      ranges.push({from: a, to: b});
      show(fig);
    });
  });
})();
