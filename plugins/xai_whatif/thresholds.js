(function () {
  "use strict";
  // The offline threshold slider of a slices section: each slice's confusion counts were
  // computed by Python on a grid of thresholds; moving the slider shows the counts and rates
  // at that grid point, without a kernel.
  function rate(a, b) { return b > 0 ? (a / b).toFixed(3) : "\u2013"; }
  function setup(root) {
    var input = root.querySelector(".xai-whatif-threshold-input");
    var block = root.querySelector(".xai-whatif-threshold-data");
    if (!input || !block) { return; }
    var data = JSON.parse(block.textContent);
    function draw() {
      var k = parseInt(input.value, 10);
      root.querySelector(".xai-whatif-threshold-value").textContent = data.grid[k].toFixed(2);
      data.slices.forEach(function (s, i) {
        var row = root.querySelector("tr[data-slice='" + i + "']");
        var tn = s.tn[k], fp = s.fp[k], fn = s.fn[k], tp = s.tp[k];
        var shown = {
          tn: tn, fp: fp, fn: fn, tp: tp,
          accuracy: rate(tp + tn, tn + fp + fn + tp),
          tpr: rate(tp, tp + fn),
          fpr: rate(fp, fp + tn),
          cost: (data.cost_ratio * fp + fn).toString()
        };
        Object.keys(shown).forEach(function (key) {
          row.querySelector("[data-k='" + key + "']").textContent = String(shown[key]);
        });
      });
    }
    input.addEventListener("input", draw);
    draw();
  }
  Array.prototype.forEach.call(document.querySelectorAll(".xai-whatif-threshold"), setup);
})();
