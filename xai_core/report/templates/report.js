(function () {
  "use strict";
  // Enhances the one report or notebook output that holds this script; reads only the page.
  var script = document.currentScript;
  var root = script && script.parentNode && script.parentNode.closest
    ? script.parentNode.closest(".xai-root") : null;
  if (!root || root.getAttribute("data-xai-ready") === "1") { return; }
  root.setAttribute("data-xai-ready", "1");
  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };

  // Live controls wait in text/html data blocks of class xai-live, so a sanitised or
  // script-less view shows none of them dead: each is put in place of its block.
  each(root.querySelectorAll("script.xai-live"), function (block) {
    var range = document.createRange();
    range.selectNode(block);
    block.parentNode.replaceChild(range.createContextualFragment(block.textContent), block);
  });

  function sortKey(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw !== null) {
      var n = parseFloat(raw);
      return { num: true, value: isNaN(n) ? -Infinity : n };
    }
    return { num: false, value: (cell.textContent || "").trim().toLowerCase() };
  }

  function sortTable(table, column, th) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    each(table.tHead.rows[0].cells, function (c) { c.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (row, i) {
      var cell = row.cells[column];
      return { row: row, key: cell ? sortKey(cell) : { num: false, value: "" }, i: i };
    });
    keyed.sort(function (a, b) {
      var x = a.key.value, y = b.key.value, d;
      if (a.key.num && b.key.num) { d = x - y; }
      else { d = String(x).localeCompare(String(y)); }
      if (d === 0) { d = a.i - b.i; return d; }
      return ascending ? d : -d;
    });
    keyed.forEach(function (k) { body.appendChild(k.row); });
  }

  each(root.querySelectorAll("table.xai-sortable"), function (table) {
    if (!table.tHead || !table.tHead.rows.length) { return; }
    each(table.tHead.rows[0].cells, function (th, column) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "xai-sort";
      button.title = "Sort by this column";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () { sortTable(table, column, th); });
    });
  });

  each(root.querySelectorAll(".xai-controls"), function (bar) {
    var scope = bar.parentNode;
    each(bar.querySelectorAll("button[data-xai-action]"), function (button) {
      button.addEventListener("click", function () {
        var open = button.getAttribute("data-xai-action") === "expand";
        each(scope.querySelectorAll("details"), function (d) { d.open = open; });
      });
    });
    bar.hidden = false;
  });

  // A link to a row folded away (the row table's, a bookmark) unfolds what holds it.
  function reveal(id) {
    var target = id ? document.getElementById(id) : null;
    if (!target || !root.contains(target)) { return null; }
    for (var d = target; d && d !== root; d = d.parentNode) {
      if (d.tagName === "DETAILS") { d.open = true; }
    }
    return target;
  }
  function hashId(href) {
    try { return decodeURIComponent((href || "").replace(/^#/, "")); } catch (err) { return ""; }
  }
  root.addEventListener("click", function (event) {
    var link = event.target && event.target.closest ? event.target.closest("a[href^='#']") : null;
    if (link && root.contains(link)) { reveal(hashId(link.getAttribute("href"))); }
  });
  var bookmarked = reveal(hashId(window.location.hash));
  if (bookmarked) { bookmarked.scrollIntoView(); }

  window.addEventListener("beforeprint", function () {
    each(root.querySelectorAll("details"), function (d) { d.open = true; });
  });
})();
