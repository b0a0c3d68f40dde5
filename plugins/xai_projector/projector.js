(function () {
  "use strict";
  // Enhances every projector view on the page not yet enhanced; reads its JSON data block.
  var W = 640, H = 480, PAD = 12, SCALE = 10000, MAXLIST = 20, DIM = 0.4;
  var LABEL_FONT = "11px system-ui,sans-serif";
  var FSI = "\u2068", PDI = "\u2069";  // isolate user text, so a bidi override stays inside

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) { e.textContent = text; }
    if (cls) { e.className = cls; }
    return e;
  }

  // The live parts (controls, canvas, search) wait in text/html data blocks of class
  // xai-live, so a sanitised or script-less view shows none of them dead: the static
  // picture alone. Each is put in place of its block.
  function instantiate(root) {
    Array.prototype.forEach.call(root.querySelectorAll("script.xai-live"), function (t) {
      var range = document.createRange();
      range.selectNode(t);
      t.parentNode.replaceChild(range.createContextualFragment(t.textContent), t);
    });
  }

  function setup(root) {
    root.setAttribute("data-xai-ready", "1");
    var block = root.querySelector("script.xai-projector-data");
    if (!block) { return; }
    instantiate(root);
    var d = JSON.parse(block.textContent);
    var n = d.n, k = d.k, has3 = !!d.z;
    var q = function (s) { return root.querySelector(s); };
    var canvas = q("canvas"), svg = q(".xai-projector-svg"), ui = q(".xai-projector-ui");
    var controls = q(".xai-projector-controls"), legend = q(".xai-projector-legend");
    var box = q("input.xai-projector-search"), regex = q("input.xai-projector-regex");
    var byBox = q("select.xai-projector-search-by");
    var status = q(".xai-projector-status"), results = q(".xai-projector-results");
    var detail = q(".xai-projector-detail"), tip = q(".xai-projector-tip");
    var colorBox = q("select.xai-projector-color"), box3 = q("input.xai-projector-3d");
    var labelBox = q("select.xai-projector-label-by"), thumbBox = q("input.xai-projector-thumbs");
    var markBox = q("select.xai-projector-bookmarks"), markButton = q(".xai-projector-bookmark");
    var marks = (d.bookmarks || []).slice();
    var labelCol = -1, thumbsOn = false, images = null;
    var snaps = d.snapshots, frameBox = q("input.xai-projector-frame");
    var playButton = q(".xai-projector-play"), iterOut = q(".xai-projector-iteration");
    var frameAt = snaps ? snaps.iterations.length - 1 : -1, playing = null;
    var ctx = canvas.getContext("2d");
    var dpr = window.devicePixelRatio || 1;
    canvas.width = W * dpr; canvas.height = H * dpr;
    ctx.scale(dpr, dpr);
    // Base positions: 2-D as the static picture; 3-D centred in [-0.5, 0.5] on one scale.
    var bx = new Float32Array(n), by = new Float32Array(n);
    var cx = new Float32Array(n), cy = new Float32Array(n), cz = new Float32Array(n), radius = 1e-9;
    for (var i = 0; i < n; i++) {
      bx[i] = PAD + d.x[i] / SCALE * (W - 2 * PAD);
      by[i] = PAD + (1 - d.y[i] / SCALE) * (H - 2 * PAD);
      if (has3) {
        cx[i] = d.x[i] / SCALE - 0.5; cy[i] = d.y[i] / SCALE - 0.5; cz[i] = d.z[i] / SCALE - 0.5;
        radius = Math.max(radius, Math.sqrt(cx[i] * cx[i] + cy[i] * cy[i] + cz[i] * cz[i]));
      }
    }
    // t-SNE's iteration animation: frame j's positions replace the 2-D base positions.
    function setFrame(j) {
      if (!snaps) { return; }
      frameAt = Math.max(0, Math.min(snaps.iterations.length - 1, j));
      var fx = snaps.x[frameAt], fy = snaps.y[frameAt];
      for (var i = 0; i < n; i++) {
        bx[i] = PAD + fx[i] / SCALE * (W - 2 * PAD);
        by[i] = PAD + (1 - fy[i] / SCALE) * (H - 2 * PAD);
      }
      if (frameBox) { frameBox.value = String(frameAt); }
      if (iterOut) { iterOut.textContent = snaps.iterations[frameAt] + " of " + snaps.iterations[snaps.iterations.length - 1]; }
      redraw();
    }
    function play(on) {
      if (!snaps) { return; }
      if (playing !== null) { window.clearTimeout(playing); playing = null; }
      if (on && frameAt >= snaps.iterations.length - 1) { setFrame(0); }
      if (playButton) {
        playButton.textContent = on ? "Pause" : "Play";
        playButton.setAttribute("aria-pressed", on ? "true" : "false");
      }
      if (!on) { return; }
      var tick = function () {
        if (frameAt >= snaps.iterations.length - 1) { play(false); return; }
        setFrame(frameAt + 1);
        playing = window.setTimeout(tick, 80);
      };
      playing = window.setTimeout(tick, 80);
    }
    var px = new Float32Array(n), py = new Float32Array(n), depth = new Float32Array(n);
    var order = new Uint32Array(n);
    var view = { k: 1, tx: 0, ty: 0, yaw: 0, pitch: 0, dims: has3 && d.dims === 3 ? 3 : 2 };
    var matched = null, selected = -1, nbrs = [];
    var gcd = function (a, b) { return b ? gcd(b, a % b) : a; };
    var stride = 7919;
    while (n > 1 && gcd(stride, n) !== 1) { stride += 2; }
    var columns = d.column_names || Object.keys(d.columns);
    var coloring = d.colorings, cols = new Array(n), current = -1;
    coloring.forEach(function (c) { if (c.codes === null) { c.codes = d.label; } });

    function setColor(j) {
      current = j;
      var c = j >= 0 ? coloring[j] : null;
      for (var i = 0; i < n; i++) {
        if (!c) { cols[i] = d.colors[0]; }
        else if (c.kind === "cat") { cols[i] = d.colors[c.codes[i] % d.colors.length]; }
        else { cols[i] = c.t[i] >= 0 ? d.scale[c.t[i]] : d.missing; }
      }
      drawLegend(c);
      draw();
    }

    function drawLegend(c) {
      legend.textContent = "";
      if (!c) { return; }
      var title = el("p", "Colour: ", "xai-projector-legend-title");
      title.style.margin = ".3em 0 .1em";
      title.appendChild(el("bdi", c.name));
      legend.appendChild(title);
      if (c.kind === "cat") {
        var ul = el("ul", undefined, "xai-projector-legend-items");
        ul.style.cssText = "list-style:none;padding:0;margin:.2em 0;display:flex;flex-wrap:wrap;gap:4px 14px";
        var shown = Math.min(c.classes.length, d.max_legend);
        for (var j = 0; j < shown; j++) {
          var li = el("li");
          var sw = el("span", undefined, "xai-projector-swatch");
          sw.style.cssText = "display:inline-block;width:10px;height:10px;margin-right:4px;background:" +
            d.colors[j % d.colors.length];
          li.appendChild(sw);
          li.appendChild(el("bdi", c.classes[j], "xai-projector-legend-name"));
          var cnt = el("span", " (" + c.counts[j].toLocaleString("en-US") + ")");
          cnt.style.color = "var(--xai-muted,#555)";
          li.appendChild(cnt);
          ul.appendChild(li);
        }
        if (c.classes.length > shown) {
          ul.appendChild(el("li", "+ " + (c.classes.length - shown) + " more values (colours repeat)"));
        }
        legend.appendChild(ul);
        return;
      }
      var bar = el("div", undefined, "xai-projector-colorbar");
      bar.style.cssText = "display:flex;align-items:center;gap:6px;margin:.2em 0";
      var lo = el("span", c.min_text, "xai-projector-cbar-min"), hi = el("span", c.max_text, "xai-projector-cbar-max");
      var strip = el("canvas");
      strip.width = 256; strip.height = 1;
      strip.style.cssText = "width:256px;height:12px;border:1px solid var(--xai-line,#999)";
      strip.setAttribute("role", "img");
      strip.setAttribute("aria-label", "colour scale from " + c.min_text + " to " + c.max_text);
      var sc = strip.getContext("2d");
      for (var s = 0; s < 256; s++) { sc.fillStyle = d.scale[s]; sc.fillRect(s, 0, 1, 1); }
      bar.appendChild(lo); bar.appendChild(strip); bar.appendChild(hi);
      legend.appendChild(bar);
      if (c.missing) { legend.appendChild(el("p", c.missing + " missing values in grey")); }
    }

    // The view transform: positions (px, py) in the 640 x 480 frame of the canvas.
    function project() {
      var i;
      if (view.dims === 3) {
        var cyw = Math.cos(view.yaw), syw = Math.sin(view.yaw);
        var cp = Math.cos(view.pitch), sp = Math.sin(view.pitch);
        var f = (Math.min(W, H) - 2 * PAD) / (2 * radius);
        for (i = 0; i < n; i++) {
          var x1 = cyw * cx[i] + syw * cz[i], z1 = -syw * cx[i] + cyw * cz[i];
          var y2 = cp * cy[i] - sp * z1, z2 = sp * cy[i] + cp * z1;
          px[i] = (W / 2 + x1 * f - W / 2) * view.k + W / 2 + view.tx;
          py[i] = (H / 2 - y2 * f - H / 2) * view.k + H / 2 + view.ty;
          depth[i] = z2;
        }
        for (i = 0; i < n; i++) { order[i] = i; }
        order.sort(function (a, b) { return depth[a] - depth[b]; });  // far first
        return;
      }
      for (i = 0; i < n; i++) {
        px[i] = (bx[i] - W / 2) * view.k + W / 2 + view.tx;
        py[i] = (by[i] - H / 2) * view.k + H / 2 + view.ty;
        order[i] = (i * stride) % n;  // a fixed shuffle, so no class always hides another
      }
    }

    function draw() {
      project();
      ctx.clearRect(0, 0, W, H);
      // Points outside a search or selection stay visible, dimmed (as TensorBoard's projector).
      var dim = matched !== null || selected >= 0;
      ctx.globalAlpha = dim ? DIM : (thumbsOn ? 1 : 0.8);  // thumbnails in their own greys
      var size = thumbSize();
      for (var j = 0; j < n; j++) {
        var p = order[j];
        ctx.fillStyle = cols[p];
        if (thumbsOn && images[p].complete && images[p].naturalWidth) {
          // The image in place of the point, framed in the point's colour (colour by still reads).
          ctx.fillRect(px[p] - size / 2 - 1, py[p] - size / 2 - 1, size + 2, size + 2);
          ctx.drawImage(images[p], px[p] - size / 2, py[p] - size / 2, size, size);
        } else {
          ctx.fillRect(px[p] - 1.5, py[p] - 1.5, 3, 3);
        }
      }
      ctx.globalAlpha = 1;
      if (matched !== null) {
        for (var m = 0; m < matched.length; m++) {
          var r = matched[m];
          ctx.fillStyle = cols[r];
          ctx.fillRect(px[r] - 2.5, py[r] - 2.5, 5, 5);
          ctx.strokeStyle = "#333"; ctx.lineWidth = 0.75;
          ctx.strokeRect(px[r] - 2.5, py[r] - 2.5, 5, 5);
        }
      }
      if (selected >= 0) {
        ctx.strokeStyle = "#000"; ctx.lineWidth = 1;
        for (var s = 0; s < nbrs.length; s++) {
          ctx.beginPath(); ctx.arc(px[nbrs[s]], py[nbrs[s]], 4, 0, 2 * Math.PI); ctx.stroke();
        }
        ctx.lineWidth = 2; ctx.strokeStyle = "#d62728";
        ctx.beginPath(); ctx.arc(px[selected], py[selected], 6, 0, 2 * Math.PI); ctx.stroke();
      }
      drawLabels();
    }

    function thumbSize() { return Math.max(8, Math.min(64, 14 * Math.sqrt(view.k))); }

    function labelText(i) {
      var c = coloring[labelCol];
      return c.kind === "cat" ? c.classes[c.codes[i]] : c.text[i];
    }

    // "Label by": text next to at most d.max_labels points, the selected point, its
    // neighbours and the search matches first, then points in sight; none overlap.
    var labelled = [];
    function drawLabels() {
      labelled = [];
      if (labelCol < 0) { return; }
      var cap = d.max_labels, taken = [], seen = {};
      var off = thumbsOn ? thumbSize() / 2 + 3 : 4;
      ctx.font = LABEL_FONT;
      ctx.textBaseline = "middle";
      var lw = 3;  // a white halo: the canvas is white in both themes
      function put(i) {
        if (labelled.length >= cap || seen[i] || px[i] < 0 || px[i] > W || py[i] < 0 || py[i] > H) { return; }
        seen[i] = true;
        var text = FSI + String(labelText(i)).replace(/\u2069/g, "") + PDI;
        var w = ctx.measureText(text).width, x = px[i] + off, y = py[i];
        var box = [x - 1, y - 7, x + w + 1, y + 7];
        for (var t = 0; t < taken.length; t++) {
          var o = taken[t];
          if (box[0] < o[2] && o[0] < box[2] && box[1] < o[3] && o[1] < box[3]) { return; }
        }
        taken.push(box);
        labelled.push(i);
        ctx.lineWidth = lw; ctx.strokeStyle = "#fff"; ctx.strokeText(text, x, y);
        ctx.fillStyle = "#1b1b1b"; ctx.fillText(text, x, y);
      }
      if (selected >= 0) { put(selected); nbrs.forEach(put); }
      if (matched !== null) { for (var m = 0; m < matched.length && labelled.length < cap; m++) { put(matched[m]); } }
      for (var j = n - 1; j >= 0 && labelled.length < cap; j--) { put(order[j]); }  // nearest first in 3-D
    }

    function setLabel(j) {
      labelCol = j >= 0 && j < coloring.length ? j : -1;
      if (labelBox) { labelBox.value = String(labelCol); }
      draw();
    }

    function setThumbs(on) {
      thumbsOn = !!(on && d.thumbs);
      if (thumbBox) { thumbBox.checked = thumbsOn; }
      if (thumbsOn && !images) {
        images = d.thumbs.map(function (src) {
          var img = new Image();
          img.onload = redraw;
          img.src = src;
          return img;
        });
      }
      draw();
    }

    // The view's state, as a bookmark keeps it (the ViewState of the Python side).
    function getState(label) {
      return {
        name: label || "", dims: view.dims, k: view.k, tx: view.tx, ty: view.ty, yaw: view.yaw,
        pitch: view.pitch, selected: selected, search: box.value, regex: regex.checked,
        search_by: byBox ? +byBox.value : -1, color: current, label: labelCol, thumbs: thumbsOn,
        frame: snaps && frameAt < snaps.iterations.length - 1 ? frameAt : -1
      };
    }
    function applyState(st) {
      view.dims = has3 && st.dims === 3 ? 3 : 2;
      if (box3) { box3.checked = view.dims === 3; }
      view.k = st.k; view.tx = st.tx; view.ty = st.ty; view.yaw = st.yaw; view.pitch = st.pitch;
      colorBox.value = String(st.color);
      if (byBox) { byBox.value = String(st.search_by); }
      box.value = st.search; regex.checked = !!st.regex;
      labelCol = st.label >= 0 && st.label < coloring.length ? st.label : -1;
      if (labelBox) { labelBox.value = String(labelCol); }
      if (snaps) { play(false); setFrame(st.frame >= 0 ? st.frame : snaps.iterations.length - 1); }
      thumbsOn = false;
      setThumbs(st.thumbs);
      setColor(st.color);
      search();
      select(st.selected >= 0 && st.selected < n ? st.selected : -1);
    }
    function addBookmark(label) {
      var st = getState(label || "view " + (marks.length + 1));
      marks.push(st);
      if (markBox) {
        var o = el("option", FSI + st.name.replace(/\u2069/g, "") + PDI);
        o.value = String(marks.length - 1);
        markBox.appendChild(o);
        markBox.value = o.value;
      }
      return st;
    }
    function loadBookmark(j) {
      if (j >= 0 && j < marks.length) { applyState(marks[j]); }
    }

    var frame = false;
    function redraw() {
      if (frame) { return; }
      frame = true;
      window.requestAnimationFrame(function () { frame = false; draw(); });
    }

    function zoom(f, mx, my) {  // by f about (mx, my) in the frame: that point stays put
      var k = Math.min(200, Math.max(0.2, view.k * f));
      f = k / view.k;
      view.tx = mx + f * (W / 2 + view.tx - mx) - W / 2;
      view.ty = my + f * (H / 2 + view.ty - my) - H / 2;
      view.k = k;
      redraw();
    }
    function pan(dx, dy) { view.tx += dx; view.ty += dy; redraw(); }
    function rotate(dx, dy) {
      view.yaw += dx * 0.01;
      view.pitch = Math.max(-Math.PI / 2, Math.min(Math.PI / 2, view.pitch + dy * 0.01));
      redraw();
    }
    function reset() { view.k = 1; view.tx = 0; view.ty = 0; view.yaw = 0; view.pitch = 0; redraw(); }
    function setDims(dims) {
      view.dims = has3 && dims === 3 ? 3 : 2;
      if (box3) { box3.checked = view.dims === 3; }
      reset();
    }

    function describe(i) {
      var parts = ["#" + i];
      // A PDI in the text itself would close the isolate early: it is dropped (as isolate() does).
      var iso = function (s) { return FSI + String(s).replace(/\u2069/g, "") + PDI; };
      if (d.label) { parts.push(iso(d.classes[d.label[i]])); }
      columns.forEach(function (c) { parts.push(iso(c) + ": " + iso(d.columns[c][i])); });
      return parts.join(" · ");
    }
    function name(i) {
      return d.label ? d.classes[d.label[i]] : (columns.length ? d.columns[columns[0]][i] : "#" + i);
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

    function frameXY(ev) {  // client pixels to the 640 x 480 frame (inside the border)
      var rect = canvas.getBoundingClientRect();
      return [(ev.clientX - rect.left - canvas.clientLeft) * W / canvas.clientWidth,
        (ev.clientY - rect.top - canvas.clientTop) * H / canvas.clientHeight];
    }

    function nearest(ev) {
      var at = frameXY(ev), best = -1, bestD = 64;
      for (var i = 0; i < n; i++) {
        var dx = px[i] - at[0], dy = py[i] - at[1], dd = dx * dx + dy * dy;
        if (dd < bestD) { bestD = dd; best = i; }
      }
      return best;
    }

    function search() {
      var s = box.value;
      results.textContent = "";
      if (!s) { matched = null; status.textContent = ""; draw(); return; }
      var test;
      if (regex.checked) {
        var re;
        try { re = new RegExp(s, "i"); } catch (e) { status.textContent = "Invalid regular expression."; return; }
        test = function (t) { return re.test(t); };
      } else {
        var lower = s.toLowerCase();
        test = function (t) { return t.toLowerCase().indexOf(lower) >= 0; };
      }
      // "Search by": column j of the labels (first, when there are any) and the metadata; -1 all.
      var by = byBox ? +byBox.value : -1, off = d.label ? 1 : 0;
      var useLabel = d.label && (by === -1 || by === 0);
      var useCols = by === -1 ? columns : (by - off >= 0 ? [columns[by - off]] : []);
      var classHit = useLabel ? d.classes.map(test) : null;
      var hits = [];
      for (var i = 0; i < n; i++) {
        var ok = classHit ? classHit[d.label[i]] : false;
        for (var c = 0; !ok && c < useCols.length; c++) { ok = test(d.columns[useCols[c]][i]); }
        if (ok) { hits.push(i); }
      }
      matched = hits;
      status.textContent = hits.length + " of " + n + " points match";
      for (var m = 0; m < Math.min(hits.length, MAXLIST); m++) {
        var li = el("li"); li.appendChild(pointButton(hits[m])); results.appendChild(li);
      }
      draw();
    }

    function hover(ev) {
      var i = nearest(ev);
      if (i < 0) { tip.hidden = true; return; }
      tip.textContent = "";
      if (d.thumbs && d.thumbs[i]) {
        var img = el("img"); img.src = d.thumbs[i]; img.alt = ""; img.width = 42; img.height = 42;
        tip.appendChild(img);
      }
      tip.appendChild(el("span", describe(i)));
      tip.style.left = (canvas.clientLeft + px[i] / W * canvas.clientWidth + 10) + "px";
      tip.style.top = (canvas.clientTop + py[i] / H * canvas.clientHeight + 10) + "px";
      tip.hidden = false;
    }

    // Pointers: one drags (pan in 2-D, rotate in 3-D, pan with shift), two pinch-zoom.
    var pointers = {}, moved = 0, lastMove = null, pending = false;
    function pair() {
      var ids = Object.keys(pointers);
      if (ids.length !== 2) { return null; }
      var a = pointers[ids[0]], b = pointers[ids[1]];
      return { x: (a[0] + b[0]) / 2, y: (a[1] + b[1]) / 2, dist: Math.hypot(a[0] - b[0], a[1] - b[1]) };
    }
    canvas.addEventListener("pointerdown", function (ev) {
      pointers[ev.pointerId] = frameXY(ev);
      if (Object.keys(pointers).length === 1) { moved = 0; }
      if (canvas.setPointerCapture) { try { canvas.setPointerCapture(ev.pointerId); } catch (e) { /* synthetic */ } }
    });
    canvas.addEventListener("pointermove", function (ev) {
      var was = pointers[ev.pointerId];
      if (!was) {
        lastMove = ev;
        if (!pending) {
          pending = true;
          window.requestAnimationFrame(function () { pending = false; hover(lastMove); });
        }
        return;
      }
      var before = pair(), now = frameXY(ev);
      pointers[ev.pointerId] = now;
      var after = pair();
      tip.hidden = true;
      if (before && after) {
        if (before.dist > 0) { zoom(after.dist / before.dist, before.x, before.y); }
        pan(after.x - before.x, after.y - before.y);
        moved += 10;
        return;
      }
      var dx = now[0] - was[0], dy = now[1] - was[1];
      moved += Math.abs(dx) + Math.abs(dy);
      if (view.dims === 3 && !ev.shiftKey) { rotate(dx, dy); } else { pan(dx, dy); }
    });
    function release(ev) { delete pointers[ev.pointerId]; }
    canvas.addEventListener("pointerup", release);
    canvas.addEventListener("pointercancel", release);
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
    canvas.addEventListener("click", function (ev) { if (moved < 4) { select(nearest(ev)); } });
    canvas.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var at = frameXY(ev), dy = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
      zoom(Math.exp(-dy * 0.002), at[0], at[1]);
    }, { passive: false });
    canvas.addEventListener("keydown", function (ev) {
      var step = 20, key = ev.key, turn = view.dims === 3 && !ev.shiftKey;
      var moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
      if (key === "+" || key === "=") { zoom(1.25, W / 2, H / 2); }
      else if (key === "-" || key === "_") { zoom(0.8, W / 2, H / 2); }
      else if (key === "0" || key === "Home") { reset(); }
      else if (moves[key]) {
        if (turn) { rotate(moves[key][0], moves[key][1]); } else { pan(-moves[key][0], -moves[key][1]); }
      } else { return; }
      ev.preventDefault();
    });
    function on(sel, fn) { var b = q(sel); if (b) { b.addEventListener("click", fn); } }
    on(".xai-projector-zoom-in", function () { zoom(1.25, W / 2, H / 2); });
    on(".xai-projector-zoom-out", function () { zoom(0.8, W / 2, H / 2); });
    on(".xai-projector-reset", reset);
    if (box3) { box3.addEventListener("change", function () { setDims(box3.checked ? 3 : 2); }); }
    colorBox.addEventListener("change", function () { setColor(+colorBox.value); });
    if (labelBox) { labelBox.addEventListener("change", function () { setLabel(+labelBox.value); }); }
    if (thumbBox) { thumbBox.addEventListener("change", function () { setThumbs(thumbBox.checked); }); }
    if (markBox) {
      markBox.addEventListener("change", function () { if (markBox.value !== "") { loadBookmark(+markBox.value); } });
    }
    if (markButton) { markButton.addEventListener("click", function () { addBookmark(); }); }
    if (frameBox) { frameBox.addEventListener("input", function () { play(false); setFrame(+frameBox.value); }); }
    if (playButton) { playButton.addEventListener("click", function () { play(playing === null); }); }
    if (snaps) { setFrame(frameAt); }
    box.addEventListener("input", search);
    regex.addEventListener("change", search);
    if (byBox) { byBox.addEventListener("change", search); }
    var note = q(".xai-projector-static-note");
    if (note) { note.hidden = true; }
    if (svg) { svg.style.display = "none"; }
    canvas.hidden = false;
    ui.hidden = false;
    controls.hidden = false;
    if (d.state) { applyState(d.state); } else { setColor(+colorBox.value); }
    root.xaiProjector = {
      setFrame: setFrame, play: play,
      frame: function () { return frameAt; },
      playing: function () { return playing !== null; },
      setLabel: setLabel, setThumbs: setThumbs, getState: getState, applyState: applyState,
      addBookmark: addBookmark, loadBookmark: loadBookmark,
      bookmarks: function () { return marks.slice(); },
      labelled: function () { return labelled.slice(); },
      thumbSize: thumbSize,
      thumbsReady: function () {
        return !!images && images.every(function (img) { return img.complete && img.naturalWidth > 0; });
      },
      select: select, search: search, px: px, py: py, name: name, zoom: zoom, pan: pan,
      rotate: rotate, reset: reset, setDims: setDims, setColor: setColor,
      colorOf: function (i) { return cols[i]; },
      view: function () { return { k: view.k, tx: view.tx, ty: view.ty, yaw: view.yaw, pitch: view.pitch, dims: view.dims, coloring: current }; }
    };
  }

  Array.prototype.forEach.call(
    document.querySelectorAll("div.xai-projector:not([data-xai-ready])"), setup);
})();
