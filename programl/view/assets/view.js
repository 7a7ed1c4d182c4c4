/* programl view: draws one ProGraML graph (the JSON in #programl-data) with Cytoscape.js.
 * Layout comes from Python (programl/view/layout.py): node positions are local to their group (a function, or the
 * module group); this script packs the groups, each at its expanded or folded size, and keeps the drawing in step
 * with what the user folds, filters, searches for and picks as a root. No network. */
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("programl-data").textContent);
  var N = D.nodes.type.length, E = D.edges.source.length, G = D.groups.length;
  var TYPES = ["instruction", "variable", "constant", "type"];
  var FLOWS = ["control", "data", "call", "type"];
  var COLORS = { control: "#345393", data: "#990000", call: "#65ae4d", type: "#888888" };
  var GROUP_GAP = 60, LABEL_ROOM = 30;
  /** With more nodes drawn than this, edges are drawn as plain lines without arrows (several times faster). */
  var FAST_LIMIT = 2500;
  var big = N > 2000 || E > 4000;
  var $ = function (id) { return document.getElementById(id); };

  var state = {
    collapsed: new Set(D.collapsed),
    flows: [true, true, true, true],
    types: [true, true, true, true],
    root: null,          // index into D.analysis.roots
    mode: "compare",
    matches: new Set()
  };
  var A = D.analysis;
  var hasModel = !!(A && A.model);
  if (A && !hasModel) state.mode = "exact";

  var members = [], blocksOf = [];
  for (var g = 0; g < G; g++) { members.push([]); blocksOf.push([]); }
  for (var i = 0; i < N; i++) members[D.nodes.group[i]].push(i);
  D.blocks.forEach(function (b, k) { blocksOf[b[0]].push(k); });
  var inEdges = new Array(N).fill(0), outEdges = new Array(N).fill(0);
  for (var k = 0; k < E; k++) { outEdges[D.edges.source[k]]++; inEdges[D.edges.target[k]]++; }

  // ------------------------------------------------------------------------------------------------ packing
  function foldedLabel(g) {
    var grp = D.groups[g];
    return grp.name + "\n" + grp.size + (grp.size === 1 ? " node" : " nodes");
  }
  function foldedWidth(g) {
    var longest = Math.max(D.groups[g].name.length, String(D.groups[g].size).length + 6);
    return Math.min(360, Math.max(90, Math.round(longest * 7.6) + 28));
  }
  function groupSize(g) {
    return state.collapsed.has(g) ? [foldedWidth(g), 48] : [D.groups[g].w, D.groups[g].h];
  }
  var order = [];
  if (G) { order.push(G - 1); for (g = 0; g < G - 1; g++) order.push(g); }  // the module group first
  var origin = new Array(G);
  function pack() {
    var area = 0, widest = 0;
    order.forEach(function (g) {
      if (!members[g].length) return;
      var s = groupSize(g);
      area += (s[0] + GROUP_GAP) * (s[1] + GROUP_GAP + LABEL_ROOM);
      widest = Math.max(widest, s[0]);
    });
    var limit = Math.max(widest, Math.sqrt(area) * 1.6);
    var x = 0, y = 0, rowHeight = 0;
    order.forEach(function (g) {
      if (!members[g].length) return;
      var s = groupSize(g);
      if (x > 0 && x + s[0] > limit) { x = 0; y += rowHeight + GROUP_GAP + LABEL_ROOM; rowHeight = 0; }
      origin[g] = [x, y];
      x += s[0] + GROUP_GAP;
      rowHeight = Math.max(rowHeight, s[1]);
    });
  }

  /** The viewport that shows the groups ``groups`` (default: all), from the packing: no label is measured. */
  function fitGroups(groups, padding) {
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    (groups || order).forEach(function (g) {
      if (!members[g].length || !origin[g]) return;
      var s = groupSize(g), o = origin[g];
      x0 = Math.min(x0, o[0]); y0 = Math.min(y0, o[1] - LABEL_ROOM);
      x1 = Math.max(x1, o[0] + s[0]); y1 = Math.max(y1, o[1] + s[1]);
    });
    if (!isFinite(x0)) return;
    padding = padding === undefined ? 30 : padding;
    var w = Math.max(cy.width() - 2 * padding, 10), h = Math.max(cy.height() - 2 * padding, 10);
    var zoom = Math.min(Math.max(Math.min(w / (x1 - x0), h / (y1 - y0)), cy.minZoom()), Math.min(cy.maxZoom(), 1.5));
    cy.viewport({ zoom: zoom, pan: { x: (cy.width() - zoom * (x1 + x0)) / 2, y: (cy.height() - zoom * (y1 + y0)) / 2 } });
  }

  // ------------------------------------------------------------------------------------------------ style
  var curve = big ? "straight" : "bezier";
  var style = [
    { selector: "node, edge", style: { "z-index-compare": "manual" } },
    { selector: "node", style: {
      "font-family": "Inconsolata, DejaVu Sans Mono, monospace", "font-size": 12,
      "text-valign": "center", "text-halign": "center", "height": 26, "min-zoomed-font-size": 5 } },
    { selector: "node[label]", style: { "label": "data(label)" } },
    { selector: "node[w]", style: { "width": "data(w)" } },
    { selector: "node[h]", style: { "height": "data(h)" } },
    { selector: "node.instruction, node.variable, node.constant", style: { "z-index": 10 } },
    { selector: "node.instruction", style: {
      "shape": "rectangle", "background-color": "#3c78d8", "color": "#ffffff", "border-width": 0 } },
    { selector: "node.variable", style: {
      "shape": "ellipse", "background-color": "#f4cccc", "border-color": "#990000", "border-width": 2,
      "color": "#990000" } },
    { selector: "node.constant", style: {
      "shape": "diamond", "background-color": "#e99c9c", "border-color": "#990000", "border-width": 2,
      "color": "#990000" } },
    { selector: "node.group", style: {
      "shape": "round-rectangle", "background-color": "#fbfbfb", "border-style": "dotted", "border-width": 2,
      "border-color": "#777", "text-valign": "top", "text-halign": "center", "z-index": 0,
      "font-size": 16, "font-weight": "bold", "color": "#333", "min-zoomed-font-size": 3, "events": "yes" } },
    { selector: "node.block", style: {
      "shape": "rectangle", "background-color": "#eef3fb", "border-width": 1, "border-color": "#a9bde0",
      "z-index": 1, "events": "no" } },
    { selector: "node.folded", style: {
      "shape": "round-rectangle", "background-color": "#dde7f7", "border-color": "#3c78d8", "border-width": 2,
      "height": 48, "text-wrap": "wrap", "font-size": 13, "color": "#10264d",
      "min-zoomed-font-size": 3 } },
    { selector: "node.folded.declaration", style: { "background-color": "#eeeeee", "border-color": "#888" } },
    { selector: "node.folded.module", style: { "background-color": "#f4e1e1", "border-color": "#990000" } },
    { selector: "edge", style: {
      "z-index": 5, "width": 1.6, "curve-style": curve, "target-arrow-shape": "triangle", "arrow-scale": 0.8,
      "line-color": COLORS.control, "target-arrow-color": COLORS.control, "font-size": 10,
      "min-zoomed-font-size": 7 } },
    { selector: "edge.data", style: { "line-color": COLORS.data, "target-arrow-color": COLORS.data } },
    { selector: "edge.call", style: { "line-color": COLORS.call, "target-arrow-color": COLORS.call } },
    { selector: "edge.type", style: { "line-color": COLORS.type, "target-arrow-color": COLORS.type } },
    { selector: "edge.at-target[position]", style: { "target-label": "data(position)", "target-text-offset": 14 } },
    { selector: "edge.at-source[position]", style: { "source-label": "data(position)", "source-text-offset": 14 } },
    { selector: "edge.fast", style: { "curve-style": "haystack", "haystack-radius": 0, "target-arrow-shape": "none" } },
    { selector: "edge.meta", style: {
      "line-style": "dashed", "curve-style": "bezier", "text-background-color": "#fff", "text-background-opacity": 1 } },
    { selector: "edge.meta[count]", style: { "label": "data(count)" } },
    { selector: "edge.meta[width]", style: { "width": "data(width)" } },
    { selector: "node.match", style: {
      "overlay-color": "#ffd600", "overlay-opacity": 0.55, "overlay-padding": 7 } },
    { selector: "node.lab-true, node.lab-tp", style: {
      "background-color": "#2e7d32", "color": "#ffffff", "border-color": "#1b5e20", "border-width": 3 } },
    { selector: "node.lab-fp", style: {
      "background-color": "#d32f2f", "color": "#ffffff", "border-color": "#000", "border-width": 4,
      "border-style": "double" } },
    { selector: "node.lab-fn", style: {
      "background-color": "#ff9800", "color": "#000000", "border-color": "#000", "border-width": 3,
      "border-style": "dashed" } },
    { selector: "node.lab-tn", style: { "opacity": 0.35 } },
    { selector: "edge.lab-dim", style: { "opacity": 0.3 } },
    { selector: "node.lab-root", style: {
      "border-color": "#ffbf00", "border-width": 6, "border-style": "solid", "opacity": 1 } },
    { selector: "node:selected", style: { "overlay-color": "#1565c0", "overlay-opacity": 0.3, "overlay-padding": 6 } }
  ];

  var cy = cytoscape({
    container: $("cy"), elements: [], style: style, layout: { name: "preset" },
    minZoom: 0.01, maxZoom: 4, boxSelectionEnabled: false, autoungrabify: true,
    textureOnViewport: big, hideEdgesOnViewport: big, motionBlur: false
  });

  // ------------------------------------------------------------------------------------------------ drawing
  function visibleType(i) { return state.types[D.nodes.type[i]] !== false; }
  function rep(i) {
    var g = D.nodes.group[i];
    if (state.collapsed.has(g)) return "c" + g;
    return visibleType(i) ? "n" + i : null;
  }
  function desired() {
    var nodes = new Map(), edges = new Map();
    order.forEach(function (g) {
      if (!members[g].length) return;
      var o = origin[g], grp = D.groups[g];
      if (state.collapsed.has(g)) {
        var w = foldedWidth(g);
        nodes.set("c" + g, { group: "nodes", data: { id: "c" + g, g: g, label: foldedLabel(g), w: w },
          position: { x: o[0] + w / 2, y: o[1] + 24 }, classes: "folded " + grp.kind });
        return;
      }
      nodes.set("g" + g, { group: "nodes", data: { id: "g" + g, g: g, label: grp.name, w: grp.w, h: grp.h },
        position: { x: o[0] + grp.w / 2, y: o[1] + grp.h / 2 }, classes: "group " + grp.kind, selectable: false });
      blocksOf[g].forEach(function (k) {
        var b = D.blocks[k];
        nodes.set("b" + k, { group: "nodes", data: { id: "b" + k, w: b[4], h: b[5] },
          position: { x: o[0] + b[2] + b[4] / 2, y: o[1] + b[3] + b[5] / 2 }, classes: "block", selectable: false });
      });
      members[g].forEach(function (i) {
        if (!visibleType(i)) return;
        nodes.set("n" + i, { group: "nodes", data: { id: "n" + i, i: i, label: D.nodes.label[i], w: D.nodes.w[i] },
          position: { x: o[0] + D.nodes.x[i], y: o[1] + D.nodes.y[i] }, classes: TYPES[D.nodes.type[i]] || "instruction" });
      });
    });
    for (var k = 0; k < E; k++) {
      var f = D.edges.flow[k];
      if (state.flows[f] === false) continue;
      var a = rep(D.edges.source[k]), b = rep(D.edges.target[k]);
      if (a === null || b === null) continue;
      var flow = FLOWS[f] || "control";
      if (a[0] === "n" && b[0] === "n") {
        var p = D.edges.position[k], cls = flow;
        if (p) cls += f === 1 ? " at-target" : " at-source";
        edges.set("e" + k, { group: "edges", data: { id: "e" + k, source: a, target: b, position: p, k: k }, classes: cls });
      } else if (a !== b) {
        var id = "m" + a + "-" + b + "-" + f, m = edges.get(id);
        if (m) m.data.count++;
        else edges.set(id, { group: "edges", data: { id: id, source: a, target: b, count: 1 }, classes: flow + " meta" });
      }
    }
    edges.forEach(function (e) { if (e.data.count) e.data.width = 1.5 + Math.log2(e.data.count); });
    var shown = 0;
    nodes.forEach(function (def, id) { if (id[0] === "n") shown++; });
    var fast = shown > FAST_LIMIT;
    edges.forEach(function (e) { if (fast && e.data.k !== undefined) e.classes += " fast"; });
    return { nodes: nodes, edges: edges, fast: fast };
  }

  function render() {
    pack();
    var want = desired();
    cy.batch(function () {
      var gone = cy.elements().filter(function (el) { return !want.nodes.has(el.id()) && !want.edges.has(el.id()); });
      cy.remove(gone);
      var add = [];
      want.nodes.forEach(function (def, id) {
        var el = cy.getElementById(id);
        if (el.empty()) add.push(def);
        else {
          if (def.position) el.position(def.position);
          if (def.data.label !== undefined) el.data("label", def.data.label);
        }
      });
      want.edges.forEach(function (def, id) {
        var el = cy.getElementById(id);
        if (el.empty()) add.push(def);
        else if (def.data.count) { el.data("count", def.data.count); el.data("width", def.data.width); }
        else if (el.hasClass("fast") !== want.fast) el.toggleClass("fast", want.fast);
      });
      cy.add(add);
    });
    applyLabels();
    applyMatches();
    syncFunctionList();
    var shown = cy.nodes(".instruction, .variable, .constant").length;
    $("status").textContent = (shown === N ? "all nodes shown" : shown + " of " + N + " nodes shown") +
      (want.fast ? " (edges without arrows above " + FAST_LIMIT + " nodes)" : "");
  }

  // ------------------------------------------------------------------------------------------------ folding
  function setCollapsed(g, folded) {
    if (folded) state.collapsed.add(g); else state.collapsed.delete(g);
  }
  function expandAll() { state.collapsed.clear(); render(); fitGroups(); }
  function collapseAll() { for (var g = 0; g < G; g++) if (members[g].length) state.collapsed.add(g); render(); fitGroups(); }
  function toggleGroup(g, folded, focus) {
    setCollapsed(g, folded);
    render();
    if (focus !== false) fitGroups([g], 40);
  }
  function syncFunctionList() {
    var boxes = $("functions").querySelectorAll("input");
    for (var j = 0; j < boxes.length; j++) boxes[j].checked = !state.collapsed.has(Number(boxes[j].dataset.g));
  }
  function buildFunctionList() {
    var list = $("functions"), count = 0;
    order.forEach(function (g) {
      if (!members[g].length) return;
      count++;
      var label = document.createElement("label"), box = document.createElement("input");
      box.type = "checkbox"; box.dataset.g = g;
      box.addEventListener("change", function () { toggleGroup(g, !box.checked); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + D.groups[g].name + " (" + D.groups[g].size + ")"));
      list.appendChild(label);
    });
    $("function-count").textContent = count;
  }

  // ------------------------------------------------------------------------------------------------ details
  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; });
  }
  function sourceOf(i) {
    var loc = D.locations[String(i)];
    if (!loc) return null;
    var file = D.files[loc[0]], line = loc[1], column = loc[2];
    var text = (D.lines[loc[0]] || {})[String(line)];
    return { where: file + ":" + line + (column ? ":" + column : ""), line: line, text: text };
  }
  function showDetails(i) {
    var t = TYPES[D.nodes.type[i]] || String(D.nodes.type[i]);
    var fn = D.nodes.group[i] < D.functions.length ? D.functions[D.nodes.function[i]] : null;
    var html = "<dl><dt>node</dt><dd>" + i + " (" + t + ")</dd><dt>text</dt><dd>" + esc(D.nodes.text[i]) + "</dd>";
    if (D.nodes.full[i]) html += "<dt>full text</dt><dd>" + esc(D.nodes.full[i]) + "</dd>";
    if (fn !== null && fn !== undefined && i !== 0 && D.nodes.type[i] !== 2) html += "<dt>function</dt><dd>" + esc(fn) + "</dd>";
    if (i !== 0) html += "<dt>block</dt><dd>" + D.nodes.block[i] + "</dd>";
    html += "<dt>edges</dt><dd>" + inEdges[i] + " in, " + outEdges[i] + " out</dd>";
    var src = sourceOf(i);
    if (src) {
      html += "<dt>source</dt><dd>" + esc(src.where) + "</dd></dl>";
      if (src.text !== undefined) html += "<pre id=\"source-line\">" + src.line + " | " + esc(src.text) + "</pre>";
    } else {
      html += "</dl>";
    }
    if (A && state.root !== null) {
      var l = labelsOf(state.root, i);
      html += "<p>root " + A.roots[state.root] + ": exact <b>" + (l.exact ? "true" : "false") + "</b>";
      if (hasModel) html += ", model <b>" + (l.pred ? "true" : "false") + "</b> (p = " + l.p.toFixed(3) + ")";
      html += "</p>";
    }
    if (A) {
      var r = A.roots.indexOf(i);
      if (r >= 0 && r !== state.root) html += "<button type=\"button\" id=\"use-root\">use as root</button>";
      else if (r < 0) html += "<p class=\"hint\">not one of the labelled roots</p>";
    }
    $("details").innerHTML = html;
    var use = $("use-root");
    if (use) use.addEventListener("click", function () { selectRoot(A.roots[A.roots.indexOf(i)]); });
  }

  function focusNode(i, zoom) {
    var g = D.nodes.group[i];
    if (state.collapsed.has(g)) toggleGroup(g, false, false);
    if (!visibleType(i)) { state.types[D.nodes.type[i]] = true; syncTypeBoxes(); render(); }
    var el = cy.getElementById("n" + i);
    if (el.empty()) return;
    cy.nodes(":selected").unselect();
    el.select();
    showDetails(i);
    var z = zoom || Math.max(cy.zoom(), 1), p = el.position();
    cy.viewport({ zoom: z, pan: { x: cy.width() / 2 - z * p.x, y: cy.height() / 2 - z * p.y } });
  }

  // ------------------------------------------------------------------------------------------------ search
  function search(query) {
    state.matches = new Set();
    var q = query.trim().toLowerCase(), out = [];
    if (q) {
      var id = /^#?(\d+)$/.exec(q);
      for (var i = 0; i < N; i++) {
        var hit = id ? i === Number(id[1]) :
          D.nodes.text[i].toLowerCase().indexOf(q) >= 0 || D.nodes.full[i].toLowerCase().indexOf(q) >= 0;
        if (hit) { state.matches.add(i); if (out.length < 200) out.push(i); }
      }
    }
    var html = q ? "<p class=\"hint\">" + state.matches.size + (state.matches.size === 1 ? " match" : " matches") +
      (state.matches.size > out.length ? " (first " + out.length + ")" : "") + "</p>" : "";
    out.forEach(function (i) {
      html += "<div data-i=\"" + i + "\">" + i + " " + esc(D.nodes.label[i]) + " <span class=\"hint\">" +
        esc(D.groups[D.nodes.group[i]].name) + "</span></div>";
    });
    $("results").innerHTML = html;
    applyMatches();
  }
  function applyMatches() {
    cy.batch(function () {
      cy.nodes(".match").removeClass("match");
      state.matches.forEach(function (i) {
        var r = rep(i);
        if (r) cy.getElementById(r).addClass("match");
      });
    });
  }

  // ------------------------------------------------------------------------------------------------ labels
  var cache = {};
  function decodeBits(text) {
    var raw = atob(text), out = new Uint8Array(N);
    for (var i = 0; i < N; i++) out[i] = (raw.charCodeAt(i >> 3) >> (i & 7)) & 1;
    return out;
  }
  function decodeBytes(text) {
    var raw = atob(text), out = new Float32Array(N);
    for (var i = 0; i < N; i++) out[i] = raw.charCodeAt(i) / 255;
    return out;
  }
  function rootData(r) {
    if (!cache[r]) {
      cache[r] = {
        exact: decodeBits(A.exact[r]),
        pred: hasModel ? decodeBits(A.predicted[r]) : null,
        p: hasModel ? decodeBytes(A.probability[r]) : null
      };
    }
    return cache[r];
  }
  function labelsOf(r, i) {
    var d = rootData(r);
    return { exact: !!d.exact[i], pred: d.pred ? !!d.pred[i] : null, p: d.p ? d.p[i] : null };
  }
  function verdict(l) {
    if (state.mode === "exact") return l.exact ? "true" : "tn";
    if (state.mode === "model") return l.pred ? "true" : "tn";
    if (l.exact && l.pred) return "tp";
    if (l.pred) return "fp";
    if (l.exact) return "fn";
    return "tn";
  }
  var LABEL_CLASSES = "lab-true lab-tp lab-fp lab-fn lab-tn lab-root";
  function applyLabels() {
    cy.batch(function () {
      cy.nodes().removeClass(LABEL_CLASSES);
      cy.edges().removeClass("lab-dim");
      if (!A || state.root === null) return;
      cy.edges().addClass("lab-dim");
      cy.nodes(".instruction, .variable, .constant").forEach(function (el) {
        var i = el.data("i");
        el.addClass("lab-" + verdict(labelsOf(state.root, i)));
      });
      cy.getElementById("n" + A.roots[state.root]).addClass("lab-root");
    });
  }
  function fillTable() {
    if (!A || state.root === null) { $("labels").innerHTML = ""; $("summary").textContent = ""; return; }
    var d = rootData(state.root), root = A.roots[state.root];
    var tp = 0, fp = 0, fn = 0, exactTrue = 0, predTrue = 0, rows = "";
    for (var i = 0; i < N; i++) {
      var e = !!d.exact[i], p = d.pred ? !!d.pred[i] : false;
      exactTrue += e; predTrue += p;
      if (hasModel) { tp += e && p; fp += p && !e; fn += e && !p; }
      if (!e && !p) continue;
      var kind = !hasModel ? "" : e && p ? "tp" : p ? "fp" : "fn";
      rows += "<tr data-i=\"" + i + "\" class=\"" + kind + "\"><td class=\"num\">" + i + "</td><td>" +
        (TYPES[D.nodes.type[i]] || "") + "</td><td class=\"text\">" + esc(D.nodes.label[i]) + "</td><td>" +
        (e ? "true" : "false") + "</td>" + (hasModel ? "<td>" + (p ? "true" : "false") + "</td><td class=\"num\">" +
        d.p[i].toFixed(3) + "</td><td class=\"verdict\">" + { tp: "", fp: "false positive", fn: "missed" }[kind] +
        "</td>" : "") + "</tr>";
    }
    var head = "<table id=\"label-table\"><thead><tr><th class=\"num\">node</th><th>type</th><th>text</th><th>exact</th>" +
      (hasModel ? "<th>model</th><th class=\"num\">p(true)</th><th></th>" : "") + "</tr></thead><tbody>";
    $("labels").innerHTML = head + rows + "</tbody></table>";
    var s = "root " + root + " (" + TYPES[D.nodes.type[root]] + " " + D.nodes.text[root] + "): exact " + exactTrue + " true";
    if (hasModel) s += "; model " + predTrue + " true: " + tp + " right, " + fp + " false positive" + (fp === 1 ? "" : "s") +
      ", " + fn + " missed";
    $("summary").textContent = s;
    $("summary").dataset.exact = exactTrue;
    $("summary").dataset.mistakes = fp + fn;
  }
  function selectRoot(id) {
    if (!A) return;
    var r = A.roots.indexOf(Number(id));
    state.root = r >= 0 ? r : null;
    $("root").value = r >= 0 ? String(A.roots[r]) : "";
    applyLabels();
    fillTable();
    if (r >= 0) focusNode(A.roots[r]);
  }
  function buildAnalysis() {
    if (!A) return;
    $("analysis").hidden = false;
    $("analysis-title").textContent = A.name + (hasModel ? " - exact labels and model " + A.model.name +
      " (" + A.model.steps + " steps)" : " - exact labels");
    var select = $("root"), html = "<option value=\"\">pick a root (" + A.roots.length + " of " + A.eligible +
      " eligible)</option>";
    A.roots.forEach(function (i) {
      html += "<option value=\"" + i + "\">" + i + " " + esc(D.nodes.label[i]) + " - " + esc(D.groups[D.nodes.group[i]].name) + "</option>";
    });
    select.innerHTML = html;
    select.addEventListener("change", function () { selectRoot(select.value === "" ? -1 : select.value); });
    var radios = document.querySelectorAll("input[name=mode]");
    for (var j = 0; j < radios.length; j++) {
      if (!hasModel && radios[j].value !== "exact") radios[j].disabled = true;
      radios[j].checked = radios[j].value === state.mode;
      radios[j].addEventListener("change", function (ev) { state.mode = ev.target.value; applyLabels(); });
    }
  }

  // ------------------------------------------------------------------------------------------------ legend
  function buildLegend() {
    var html = "<h2>Legend</h2>" +
      "<div><span class=\"swatch\" style=\"background:#3c78d8\"></span>instruction (box)</div>" +
      "<div><span class=\"swatch\" style=\"background:#f4cccc;border-color:#990000;border-radius:50%\"></span>variable (ellipse)</div>" +
      "<div><span class=\"swatch\" style=\"background:#e99c9c;border-color:#990000;transform:rotate(45deg) scale(.8)\"></span>constant (diamond)</div>" +
      "<div><span class=\"flow-control\">&#8212;</span> control <span class=\"flow-data\">&#8212;</span> data <span class=\"flow-call\">&#8212;</span> call; dashed: edges to a folded function (their count)</div>";
    if (A) html += "<div><span class=\"swatch\" style=\"background:#2e7d32\"></span>labelled true" + (hasModel ? " by both" : "") + "</div>" +
      (hasModel ? "<div><span class=\"swatch\" style=\"background:#d32f2f\"></span>false positive (the model says true)</div>" +
      "<div><span class=\"swatch\" style=\"background:#ff9800\"></span>missed (the model says false)</div>" : "") +
      "<div><span class=\"swatch\" style=\"border:3px solid #ffbf00\"></span>the root</div>";
    $("legend").innerHTML = html;
    $("credits").textContent = (D.generator || "programl") + "; drawn with Cytoscape.js (MIT licence)";
  }

  // ------------------------------------------------------------------------------------------------ events
  function syncTypeBoxes() {
    $("type-variable").checked = state.types[1];
    $("type-constant").checked = state.types[2];
  }
  ["control", "data", "call"].forEach(function (name, f) {
    $("flow-" + name).addEventListener("change", function (ev) { state.flows[f] = ev.target.checked; render(); });
  });
  [["variable", 1], ["constant", 2]].forEach(function (pair) {
    $("type-" + pair[0]).addEventListener("change", function (ev) { state.types[pair[1]] = ev.target.checked; render(); });
  });
  $("expand-all").addEventListener("click", expandAll);
  $("collapse-all").addEventListener("click", collapseAll);
  $("fit").addEventListener("click", function () { fitGroups(); });
  var timer = null;
  $("search").addEventListener("input", function (ev) {
    clearTimeout(timer);
    timer = setTimeout(function () { search(ev.target.value); }, N > 2000 ? 250 : 60);
  });
  $("results").addEventListener("click", function (ev) {
    var row = ev.target.closest("[data-i]");
    if (row) focusNode(Number(row.dataset.i));
  });
  $("labels").addEventListener("click", function (ev) {
    var row = ev.target.closest("tr[data-i]");
    if (row) focusNode(Number(row.dataset.i));
  });
  cy.on("tap", "node", function (ev) {
    var el = ev.target;
    if (el.hasClass("folded")) { toggleGroup(el.data("g"), false); return; }
    if (el.data("i") !== undefined) showDetails(el.data("i"));
  });
  cy.on("dbltap", "node.group", function (ev) { toggleGroup(ev.target.data("g"), true); });

  // ------------------------------------------------------------------------------------------------ start
  var c = D.counts;
  $("counts").textContent = c.nodes + " nodes (" + c.instructions + " instructions, " + c.variables + " variables, " +
    c.constants + " constants) \u00b7 " + c.edges + " edges \u00b7 " + c.functions + " functions";
  $("counts").dataset.nodes = c.nodes;
  $("counts").dataset.edges = c.edges;
  buildFunctionList();
  buildAnalysis();
  buildLegend();
  render();
  fitGroups();

  /** What the page shows, for scripts and tests. */
  window.programlView = {
    data: D,
    cy: cy,
    /** Graph nodes drawn (folded functions count as none of theirs). */
    nodeCount: function () { return cy.nodes(".instruction, .variable, .constant").length; },
    edgeCount: function () { return cy.edges().not(".meta").length; },
    expandAll: expandAll,
    collapseAll: collapseAll,
    toggleGroup: toggleGroup,
    selectRoot: selectRoot,
    focusNode: focusNode,
    search: function (q) { $("search").value = q; search(q); return state.matches.size; },
    state: state
  };
  document.body.dataset.ready = "true";
})();
