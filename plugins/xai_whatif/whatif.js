(function () {
  "use strict";
  // The offline what-if editor: re-scores an edited row with the exported network's forward pass.
  function dense(x, layer) {
    var out = layer.b.slice();
    for (var i = 0; i < x.length; i++) {
      var row = layer.w[i], xi = x[i];
      for (var j = 0; j < out.length; j++) { out[j] += xi * row[j]; }
    }
    return out;
  }
  var ACT = {
    relu: function (v) { return v.map(function (a) { return a > 0 ? a : 0; }); },
    tanh: function (v) { return v.map(Math.tanh); },
    sigmoid: function (v) { return v.map(function (a) { return 1 / (1 + Math.exp(-a)); }); },
    linear: function (v) { return v; },
    softmax: function (v) {
      var m = Math.max.apply(null, v), e = v.map(function (a) { return Math.exp(a - m); });
      var s = e.reduce(function (a, b) { return a + b; }, 0);
      return e.map(function (a) { return a / s; });
    }
  };
  function forward(net, x) {
    var h = x;
    for (var k = 0; k < net.length; k++) {
      h = net[k].type === "dense" ? dense(h, net[k]) : ACT[net[k].type](h);
    }
    return h;
  }
  function predicted(d, out) {
    if (d.task === "regression") { return out[0].toPrecision(6); }
    var c = out.length === 1 ? (out[0] >= 0.5 ? 1 : 0) : out.indexOf(Math.max.apply(null, out));
    // The class name is isolated (FSI ... PDI) so that a U+202E in it cannot reverse " (c)".
    return (d.outputs[c] === undefined ? "class " + c : "\u2068" + d.outputs[c] + "\u2069") +
      " (" + c + ")";
  }
  function fixed(v, d) {  // v with d decimals, as the column shows it ("-0" read as "0")
    var t = v.toFixed(d);
    return parseFloat(t) === 0 ? t.replace(/^-/, "") : t;
  }
  function sig(v) { return String(parseFloat(v.toPrecision(3))); }
  function setup(root) {
    root.setAttribute("data-xai-ready", "1");
    var block = root.querySelector("script.xai-whatif-offline-data");
    if (!block) { return; }
    var d = JSON.parse(block.textContent);
    var inputs = root.querySelectorAll("[data-feature]");
    var pick = root.querySelector("select.xai-whatif-offline-row");
    var pdPick = root.querySelector("select.xai-whatif-offline-pd-feature");
    var status = root.querySelector(".xai-whatif-offline-status");
    var warning = root.querySelector(".xai-whatif-offline-warning");
    var chart = root.querySelector("svg.xai-whatif-offline-pd-chart");
    var base = d.rows[0].slice(), focus = 0, means = {};
    function slot(input) { return parseInt(input.getAttribute("data-feature"), 10); }
    function shown(j) { return fixed(base[j], d.decimals[j]); }
    function values() {
      var x = base.slice();
      for (var i = 0; i < inputs.length; i++) {
        var j = slot(inputs[i]);
        // An untouched box shows the row's value rounded to the column's decimals: keep the exact value.
        if (inputs[i].value === shown(j)) { continue; }
        var v = parseFloat(inputs[i].value);
        x[j] = isFinite(v) ? v : x[j];
      }
      return x;
    }
    function flag(x) {  // mark every value outside the data's range; say how many
      var outside = [];
      for (var i = 0; i < inputs.length; i++) {
        var j = slot(inputs[i]), out = x[j] < d.lo[j] || x[j] > d.hi[j];
        var mark = root.querySelector("[data-flag='" + j + "']");
        if (out) {
          inputs[i].setAttribute("aria-invalid", "true");
          inputs[i].classList.add("xai-out-of-range");
          inputs[i].style.outline = "2px solid var(--xai-flag,#b2182b)";
          outside.push(root.querySelector("label[for='" + inputs[i].id + "']").textContent);
        } else {
          inputs[i].removeAttribute("aria-invalid");
          inputs[i].classList.remove("xai-out-of-range");
          inputs[i].style.outline = "";
        }
        if (mark) { mark.style.display = out ? "block" : "none"; }
      }
      if (warning) {
        warning.hidden = !outside.length;
        warning.textContent = outside.length ?
          "\u26a0 " + outside.length + (outside.length === 1 ? " value is" : " values are") +
          " outside the range of the data (the model has not seen such values): " +
          outside.map(function (s) { return "\u2068" + s + "\u2069"; }).join(", ") + "." : "";
      }
    }
    function set(cls, attrs, text) {
      var e = chart.querySelector("." + cls);
      for (var a in attrs) { e.setAttribute(a, attrs[a]); }
      if (text !== undefined) { e.textContent = text; }
    }
    function drawPD(x, out) {  // this row's curve and the mean over the page's rows, output d.pd_output
      if (!chart || focus < 0) { return; }
      var j = focus, g = d.grids[j], k = d.pd_output, b = d.box, m = d.rows.length;
      // The mean over the page's rows does not change with an edit: computed once per feature.
      var mean = means[j], mine = [];
      if (!mean) {
        mean = means[j] = g.map(function () { return 0; });
        for (var c = 0; c < g.length; c++) {
          for (var r = 0; r < m; r++) {
            var z = d.rows[r].slice(); z[j] = g[c];
            mean[c] += forward(d.net, z)[k] / m;
          }
        }
      }
      for (var a = 0; a < g.length; a++) {
        var y = x.slice(); y[j] = g[a];
        mine.push(forward(d.net, y)[k]);
      }
      var value = x[j], now = out[k];
      var x0 = Math.min(g[0], value), x1 = Math.max(g[g.length - 1], value);
      if (!(x1 > x0)) { x0 -= 0.5; x1 += 0.5; }
      var y0, y1;
      if (d.ylim) { y0 = d.ylim[0]; y1 = d.ylim[1]; } else {
        y0 = Math.min.apply(null, mean.concat(mine, [now]));
        y1 = Math.max.apply(null, mean.concat(mine, [now]));
        if (!(y1 > y0)) { y0 -= 0.5; y1 += 0.5; }
      }
      var fx = function (v) { return b.x0 + (v - x0) / (x1 - x0) * b.pw; };
      var fy = function (v) { return b.y0 + (1 - (v - y0) / (y1 - y0)) * b.ph; };
      var line = function (vals) {
        return g.map(function (v, a) { return fx(v).toFixed(1) + "," + fy(vals[a]).toFixed(1); }).join(" ");
      };
      set("xai-pd-mean", { points: line(mean) });
      set("xai-pd-row", { points: line(mine) });
      set("xai-pd-marker", { x1: fx(value).toFixed(1), x2: fx(value).toFixed(1) });
      var outside = value < d.lo[j] || value > d.hi[j];
      set("xai-pd-dot", { cx: fx(value).toFixed(1), cy: fy(now).toFixed(1),
        fill: outside ? "#b2182b" : "#e6550d" });
      set("xai-pd-xmin", {}, fixed(x0, d.decimals[j]));
      set("xai-pd-xmax", {}, fixed(x1, d.decimals[j]));
      set("xai-pd-ymin", {}, sig(y0));
      set("xai-pd-ymax", {}, sig(y1));
      chart.setAttribute("data-feature", String(j));
      chart.setAttribute("data-row-curve", JSON.stringify(mine));
      chart.setAttribute("data-mean-curve", JSON.stringify(mean));
      var name = root.querySelector(".xai-whatif-offline-pd-name");
      var label = root.querySelector("label[for='" + root.id + "-f" + j + "']");
      if (name && label) { name.textContent = label.textContent; }
      var shownValue = root.querySelector(".xai-whatif-offline-pd-value");
      if (shownValue) { shownValue.textContent = fixed(value, d.decimals[j]) + (outside ? " (outside the range of the data)" : ""); }
    }
    function score() {
      var x = values(), out = forward(d.net, x);
      for (var k = 0; k < out.length; k++) {
        var cell = root.querySelector("[data-output='" + k + "']");
        if (cell) { cell.textContent = out[k].toPrecision(6); }
      }
      var p = root.querySelector(".xai-whatif-offline-predicted");
      if (p) { p.textContent = predicted(d, out); }
      flag(x);
      drawPD(x, out);
      if (status) { status.textContent = "Re-scored in the page."; }
    }
    function load(r) {
      base = d.rows[r].slice();
      for (var i = 0; i < inputs.length; i++) { inputs[i].value = shown(slot(inputs[i])); }
      score();
    }
    function follow(j) {  // the partial dependence shown is the feature being edited
      if (focus === j) { return; }
      focus = j;
      if (pdPick) { pdPick.value = String(j); }
      score();
    }
    for (var i = 0; i < inputs.length; i++) {
      inputs[i].disabled = false;
      inputs[i].addEventListener("input", score);
      inputs[i].addEventListener("change", score);
      inputs[i].addEventListener("focus", function (ev) { follow(slot(ev.target)); });
    }
    if (pick) {
      pick.disabled = false;
      pick.addEventListener("change", function () {
        load(parseInt(pick.value, 10));
      });
    }
    if (pdPick) {
      pdPick.disabled = false;
      pdPick.addEventListener("change", function () { follow(parseInt(pdPick.value, 10)); });
    }
    var reset = root.querySelector("button.xai-whatif-offline-reset");
    if (reset) {
      reset.disabled = false;
      reset.addEventListener("click", function () {
        load(pick ? parseInt(pick.value, 10) : 0);
      });
    }
    load(0);
  }
  var roots = document.querySelectorAll(".xai-whatif-offline:not([data-xai-ready])");
  for (var r = 0; r < roots.length; r++) { setup(roots[r]); }
})();
