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
  function setup(root) {
    root.setAttribute("data-xai-ready", "1");
    var block = root.querySelector("script.xai-whatif-offline-data");
    if (!block) { return; }
    var d = JSON.parse(block.textContent);
    var inputs = root.querySelectorAll("[data-feature]");
    var pick = root.querySelector("select.xai-whatif-offline-row");
    var status = root.querySelector(".xai-whatif-offline-status");
    var base = d.rows[0].slice();
    function values() {
      var x = base.slice();
      for (var i = 0; i < inputs.length; i++) {
        var j = parseInt(inputs[i].getAttribute("data-feature"), 10);
        var v = parseFloat(inputs[i].value);
        x[j] = isFinite(v) ? v : x[j];
      }
      return x;
    }
    function score() {
      var x = values(), out = forward(d.net, x);
      for (var k = 0; k < out.length; k++) {
        var cell = root.querySelector("[data-output='" + k + "']");
        if (cell) { cell.textContent = out[k].toPrecision(6); }
      }
      var p = root.querySelector(".xai-whatif-offline-predicted");
      if (p) { p.textContent = predicted(d, out); }
      if (status) { status.textContent = "Re-scored in the page."; }
    }
    function load(r) {
      var x = d.rows[r];
      base = x.slice();
      for (var i = 0; i < inputs.length; i++) {
        inputs[i].value = String(x[parseInt(inputs[i].getAttribute("data-feature"), 10)]);
      }
      score();
    }
    for (var i = 0; i < inputs.length; i++) {
      inputs[i].disabled = false;
      inputs[i].addEventListener("input", score);
      inputs[i].addEventListener("change", score);
    }
    if (pick) {
      pick.disabled = false;
      pick.addEventListener("change", function () {
        load(parseInt(pick.value, 10));
      });
    }
    var reset = root.querySelector("button.xai-whatif-offline-reset");
    if (reset) {
      reset.disabled = false;
      reset.addEventListener("click", function () {
        load(pick ? parseInt(pick.value, 10) : 0);
      });
    }
  }
  var roots = document.querySelectorAll(".xai-whatif-offline:not([data-xai-ready])");
  for (var r = 0; r < roots.length; r++) { setup(roots[r]); }
})();
