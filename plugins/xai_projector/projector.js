(function () {
  "use strict";
  // Enhances every projector view on the page not yet enhanced; reads its JSON data block.
  var W = 640, H = 480, PAD = 12, SCALE = 10000, MAXLIST = 20;

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) { e.textContent = text; }
    if (cls) { e.className = cls; }
    return e;
  }

  function setup(root) {
    root.setAttribute("data-xai-ready", "1");
    var block = root.querySelector("script.xai-projector-data");
    if (!block) { return; }
    var d = JSON.parse(block.textContent);
    var n = d.n, k = d.k;
    var canvas = root.querySelector("canvas");
    var svg = root.querySelector(".xai-projector-svg");
    var ui = root.querySelector(".xai-projector-ui");
    var box = root.querySelector("input.xai-projector-search");
    var regex = root.querySelector("input.xai-projector-regex");
    var status = root.querySelector(".xai-projector-status");
    var results = root.querySelector(".xai-projector-results");
    var detail = root.querySelector(".xai-projector-detail");
    var tip = root.querySelector(".xai-projector-tip");
    var ctx = canvas.getContext("2d");
    var dpr = window.devicePixelRatio || 1;
    canvas.width = W * dpr; canvas.height = H * dpr;
    ctx.scale(dpr, dpr);
    var px = new Float32Array(n), py = new Float32Array(n);
    for (var i = 0; i < n; i++) {
      px[i] = PAD + d.x[i] / SCALE * (W - 2 * PAD);
      py[i] = PAD + (1 - d.y[i] / SCALE) * (H - 2 * PAD);
    }
    var matched = null, selected = -1, nbrs = [];
    var gcd = function (a, b) { return b ? gcd(b, a % b) : a; };
    var stride = 7919;
    while (n > 1 && gcd(stride, n) !== 1) { stride += 2; }
    var columns = Object.keys(d.columns);

    function colorOf(i) { return d.label ? d.colors[d.label[i] % d.colors.length] : "#1f77b4"; }
    function name(i) {
      return d.label ? d.classes[d.label[i]] : (columns.length ? d.columns[columns[0]][i] : "#" + i);
    }

    function draw() {
      ctx.clearRect(0, 0, W, H);
      var dim = matched !== null || selected >= 0;
      ctx.globalAlpha = dim ? 0.15 : 0.8;
      for (var j = 0; j < n; j++) {
        var p = (j * stride) % n;  // a fixed shuffle, so no class always hides another
        ctx.fillStyle = colorOf(p);
        ctx.fillRect(px[p] - 1.5, py[p] - 1.5, 3, 3);
      }
      ctx.globalAlpha = 1;
      if (matched !== null) {
        for (var m = 0; m < matched.length; m++) {
          var q = matched[m];
          ctx.fillStyle = colorOf(q);
          ctx.fillRect(px[q] - 2.5, py[q] - 2.5, 5, 5);
        }
      }
      if (selected >= 0) {
        ctx.strokeStyle = "#000"; ctx.lineWidth = 1;
        for (var r = 0; r < nbrs.length; r++) {
          ctx.beginPath(); ctx.arc(px[nbrs[r]], py[nbrs[r]], 4, 0, 2 * Math.PI); ctx.stroke();
        }
        ctx.lineWidth = 2; ctx.strokeStyle = "#d62728";
        ctx.beginPath(); ctx.arc(px[selected], py[selected], 6, 0, 2 * Math.PI); ctx.stroke();
      }
    }

    function describe(i) {
      var parts = ["#" + i];
      if (d.label) { parts.push(d.classes[d.label[i]]); }
      columns.forEach(function (c) { parts.push(c + ": " + d.columns[c][i]); });
      return parts.join(" · ");
    }

    function pointButton(i, extra) {
      var b = el("button", describe(i) + (extra || ""), "xai-projector-point");
      b.type = "button";
      b.setAttribute("data-index", String(i));
      b.addEventListener("click", function () { select(i); });
      return b;
    }

    function select(i) {
      selected = i;
      nbrs = [];
      detail.textContent = "";
      if (i < 0) { draw(); return; }
      detail.appendChild(el("p", "Selected: " + describe(i), "xai-projector-selected"));
      if (d.thumbs && d.thumbs[i]) {
        var img = el("img"); img.src = d.thumbs[i]; img.alt = "image of point " + i;
        img.width = 56; img.height = 56; detail.appendChild(img);
      }
      if (d.heatmaps && d.heatmaps[i]) {
        var fig = el("figure", undefined, "xai-projector-heatmap");
        var hm = el("img"); hm.src = d.heatmaps[i]; hm.alt = "attributions of point " + i;
        hm.width = 84; hm.height = 84; hm.style.imageRendering = "pixelated";
        fig.appendChild(hm);
        fig.appendChild(el("figcaption", "Attributions: red raises the explained output, blue lowers it"));
        detail.appendChild(fig);
      }
      detail.appendChild(el("p", "Nearest " + k + " neighbours (" + d.metric +
        " distance in the original space):"));
      var list = el("ol", undefined, "xai-projector-neighbors");
      for (var r = 0; r < k; r++) {
        var j = d.nbr[i * k + r];
        nbrs.push(j);
        var li = el("li");
        li.appendChild(pointButton(j, " — " + d.dist[i * k + r]));
        list.appendChild(li);
      }
      detail.appendChild(list);
      draw();
    }

    function nearest(ev) {
      var rect = canvas.getBoundingClientRect();
      var x = (ev.clientX - rect.left) * W / rect.width, y = (ev.clientY - rect.top) * H / rect.height;
      var best = -1, bestD = 64;
      for (var i = 0; i < n; i++) {
        var dx = px[i] - x, dy = py[i] - y, dd = dx * dx + dy * dy;
        if (dd < bestD) { bestD = dd; best = i; }
      }
      return best;
    }

    function search() {
      var q = box.value;
      results.textContent = "";
      if (!q) { matched = null; status.textContent = ""; draw(); return; }
      var test;
      if (regex.checked) {
        var re;
        try { re = new RegExp(q, "i"); } catch (e) { status.textContent = "Invalid regular expression."; return; }
        test = function (s) { return re.test(s); };
      } else {
        var lower = q.toLowerCase();
        test = function (s) { return s.toLowerCase().indexOf(lower) >= 0; };
      }
      var classHit = d.label ? d.classes.map(test) : null;
      var hits = [];
      for (var i = 0; i < n; i++) {
        var ok = classHit ? classHit[d.label[i]] : false;
        for (var c = 0; !ok && c < columns.length; c++) { ok = test(d.columns[columns[c]][i]); }
        if (ok) { hits.push(i); }
      }
      matched = hits;
      status.textContent = hits.length + " of " + n + " points match";
      for (var m = 0; m < Math.min(hits.length, MAXLIST); m++) {
        var li = el("li"); li.appendChild(pointButton(hits[m])); results.appendChild(li);
      }
      draw();
    }

    var pending = false, lastMove = null;
    canvas.addEventListener("mousemove", function (ev) {
      lastMove = ev;
      if (pending) { return; }
      pending = true;
      window.requestAnimationFrame(function () {
        pending = false;
        var i = nearest(lastMove);
        if (i < 0) { tip.hidden = true; return; }
        tip.textContent = "";
        if (d.thumbs && d.thumbs[i]) {
          var img = el("img"); img.src = d.thumbs[i]; img.alt = ""; img.width = 42; img.height = 42;
          tip.appendChild(img);
        }
        tip.appendChild(el("span", describe(i)));
        tip.style.left = (px[i] / W * canvas.clientWidth + 10) + "px";
        tip.style.top = (py[i] / H * canvas.clientHeight + 10) + "px";
        tip.hidden = false;
      });
    });
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
    canvas.addEventListener("click", function (ev) { select(nearest(ev)); });
    box.addEventListener("input", search);
    regex.addEventListener("change", search);
    var note = root.querySelector(".xai-projector-static-note");
    if (note) { note.hidden = true; }
    if (svg) { svg.style.display = "none"; }
    canvas.hidden = false;
    ui.hidden = false;
    draw();
    root.xaiProjector = { select: select, search: search, px: px, py: py, name: name };
  }

  Array.prototype.forEach.call(
    document.querySelectorAll("div.xai-projector:not([data-xai-ready])"), setup);
})();
