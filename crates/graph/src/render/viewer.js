// The dataflow graph viewer: pan (drag), zoom (wheel, buttons), search,
// groups opened and closed (double-click, or the +/- corner), a node
// selected by a click. Layout comes from Rust (layout.rs); `place` below
// redoes only its last step, where open groups grow, exactly as
// layout::place does. Only what is in view is in the DOM, so a file of
// 100,000 equations draws as fast as a small one; far out, nodes and edges
// are drawn as one path each.
//
// Inside a VS Code webview, a click posts {type: 'select', node, range} and
// a message {type: 'reveal', line, character} selects the innermost
// equation at that position.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('graph-data').textContent);
  const M = data.metrics;
  const N = data.kind.length;
  // NodeKind's order (model.rs).
  const KINDS = ['input', 'const', 'eqn', 'output', 'scope'];
  const EQN = KINDS.indexOf('eqn');
  const vscode = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : null;

  const svg = document.getElementById('canvas');
  const viewport = document.getElementById('viewport');
  const status = document.getElementById('status');
  const NS = 'http://www.w3.org/2000/svg';

  // Which groups are open: every group up to data.openDepth at first.
  const open = new Uint8Array(N);
  const blockDepth = data.blocks.title.map((_, b) => depthOf(b));
  for (const key of Object.keys(data.children)) {
    const n = Number(key);
    if (blockDepth[data.block[n]] < data.openDepth) open[n] = 1;
  }

  function depthOf(b) {
    let d = 0;
    for (let o = data.blocks.owner[b]; o >= 0; o = data.blocks.owner[data.block[o]]) d++;
    return d;
  }

  let placed = null; // {nx, ny, nw, nh: Float32Array, visible: Uint8Array, blocks: [[x,y,w,h]|null]}
  let selected = -1;
  let scale = 1;
  let tx = 0;
  let ty = 0;

  // ---- placement (mirrors layout::place) ----
  function place() {
    const nw = Float32Array.from(data.w);
    const nh = Float32Array.from(data.h);
    const B = data.blocks.title.length;
    const bw = new Float32Array(B);
    const bh = new Float32Array(B);
    for (let b = B - 1; b >= 0; b--) {
      for (const row of data.blocks.rows[b]) {
        for (const n of row) {
          if (open[n] && data.children[n]) {
            let width = M.BLOCK_PADDING;
            let height = 0;
            for (const c of data.children[n]) {
              width += bw[c] + M.BLOCK_GAP;
              height = Math.max(height, bh[c] + M.BLOCK_TITLE);
            }
            width += M.BLOCK_PADDING - M.BLOCK_GAP;
            nw[n] = Math.max(width, data.w[n]);
            nh[n] = M.GROUP_HEADER + height + M.BLOCK_PADDING;
          }
        }
      }
      const size = grown(b, nw, nh, null);
      bw[b] = size[0];
      bh[b] = size[1];
    }
    const nx = new Float32Array(N);
    const ny = new Float32Array(N);
    const visible = new Uint8Array(N);
    const blocks = new Array(B).fill(null);
    let x = 0;
    let height = 0;
    const placeBlock = (b, bx, by) => {
      blocks[b] = [bx, by, bw[b], bh[b]];
      const pos = [];
      grown(b, nw, nh, pos);
      for (let k = 0; k < pos.length; k += 3) {
        const n = pos[k];
        nx[n] = bx + pos[k + 1];
        ny[n] = by + pos[k + 2];
        visible[n] = 1;
        if (open[n] && data.children[n]) {
          let cx = nx[n] + M.BLOCK_PADDING;
          for (const c of data.children[n]) {
            placeBlock(c, cx, ny[n] + M.GROUP_HEADER + M.BLOCK_TITLE);
            cx += bw[c] + M.BLOCK_GAP;
          }
        }
      }
    };
    for (const r of data.roots) {
      placeBlock(r, x, 0);
      x += bw[r] + M.BLOCK_GAP;
      height = Math.max(height, bh[r]);
    }
    placed = { nx, ny, nw, nh, visible, blocks, width: Math.max(0, x - M.BLOCK_GAP), height };
  }

  function grown(b, nw, nh, pos) {
    let shiftDown = 0;
    let width = data.blocks.width[b];
    for (const row of data.blocks.rows[b]) {
      let shiftRight = 0;
      let grow = 0;
      for (const n of row) {
        if (pos) pos.push(n, data.x[n] + shiftRight, data.y[n] + shiftDown);
        shiftRight += nw[n] - data.w[n];
        grow = Math.max(grow, nh[n] - M.NODE_HEIGHT);
        width = Math.max(width, data.x[n] + shiftRight + data.w[n] + M.BLOCK_PADDING);
      }
      shiftDown += grow;
    }
    return [width, data.blocks.height[b] + shiftDown];
  }

  // ---- drawing ----
  const DETAIL_LIMIT = 2500;
  let frame = 0;
  function redraw() {
    if (!frame) frame = requestAnimationFrame(draw);
  }

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function text(parent, x, y, s, cls) {
    const t = el('text', { x, y }, parent);
    if (cls) t.setAttribute('class', cls);
    t.textContent = s;
    return t;
  }

  // The node drawn for n: itself, or the outermost closed group around it
  // (layout::Placement::drawn_as).
  function drawnAs(n) {
    let d = n;
    for (let o = data.blocks.owner[data.block[n]]; o >= 0; o = data.blocks.owner[data.block[o]]) {
      if (!open[o]) d = o;
    }
    return d;
  }

  // Where the edges of n's port-th value leave it (layout::out_port).
  function outPort(n, port) {
    const P = placed;
    const labels = data.valueLabels[n];
    const count = Math.max(labels.length, 1);
    const k = Math.min(port, count - 1);
    const band = labels[port] >= 0 ? M.VALUE_LABEL_BAND : 0;
    return [P.nx[n] + (P.nw[n] * (k + 0.5)) / count, P.ny[n] + P.nh[n] + band];
  }

  function draw() {
    frame = 0;
    viewport.setAttribute('transform', `translate(${tx},${ty}) scale(${scale})`);
    const rect = svg.getBoundingClientRect();
    const x0 = -tx / scale;
    const y0 = -ty / scale;
    const x1 = x0 + rect.width / scale;
    const y1 = y0 + rect.height / scale;
    const P = placed;
    const inView = (x, y, w, h) => x + w >= x0 && x <= x1 && y + h >= y0 && y <= y1;
    const shown = [];
    for (let n = 0; n < N; n++) {
      if (P.visible[n] && inView(P.nx[n], P.ny[n], P.nw[n], P.nh[n])) shown.push(n);
    }
    viewport.textContent = '';
    const blockLayer = el('g', {}, viewport);
    const edgeLayer = el('g', {}, viewport);
    const nodeLayer = el('g', {}, viewport);
    P.blocks.forEach((r, b) => {
      if (!r || !inView(r[0], r[1] - 16, r[2], r[3] + 16)) return;
      const g = el('g', { class: 'block', id: `b${b}` }, blockLayer);
      el('rect', { x: r[0], y: r[1], width: r[2], height: r[3] }, g);
      text(g, r[0] + 4, r[1] - 5, data.blocks.title[b]);
    });
    const detailed = shown.length <= DETAIL_LIMIT;
    // Edges: those with an end in view, between the nodes drawn for their
    // ends (a closed scope group for the equations in it), once per value.
    const E = data.edges.length / 4;
    let edgePath = '';
    let edgeCount = 0;
    const seen = new Set();
    for (let k = 0; k < E; k++) {
      const source = data.edges[4 * k];
      const target = data.edges[4 * k + 2];
      const from = drawnAs(source);
      const to = drawnAs(target);
      if (!P.visible[from] || !P.visible[to] || from === to) continue;
      if (from !== source || to !== target) {
        const key = `${from} ${source} ${data.edges[4 * k + 1]} ${to}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      const [ax, ay] = from === source ? outPort(from, data.edges[4 * k + 1]) : [P.nx[from] + P.nw[from] / 2, P.ny[from] + P.nh[from]];
      const port = data.edges[4 * k + 3];
      const bx = to === target ? P.nx[to] + (P.nw[to] * (port + 1)) / (Math.max(data.operands[to], port + 1) + 1) : P.nx[to] + P.nw[to] / 2;
      const by = P.ny[to];
      if (Math.max(ax, bx) < x0 || Math.min(ax, bx) > x1 || Math.max(ay, by) < y0 || Math.min(ay, by) > y1) continue;
      const bend = Math.max((by - ay) / 2, 20);
      const d = `M${ax},${ay} C${ax},${ay + bend} ${bx},${by - bend} ${bx},${by}`;
      edgeCount++;
      if (detailed) {
        const cls = from === selected || to === selected ? 'edge hot' : 'edge';
        el('path', { class: cls, d }, edgeLayer);
      } else if (edgeCount < 40000) {
        edgePath += d;
      }
    }
    if (!detailed && edgePath) el('path', { class: 'edge', d: edgePath }, edgeLayer);
    if (detailed) {
      for (const n of shown) drawNode(nodeLayer, n);
    } else {
      let d = '';
      for (const n of shown) d += `M${P.nx[n]},${P.ny[n]}h${P.nw[n]}v${P.nh[n]}h${-P.nw[n]}z`;
      el('path', { class: 'far', d }, nodeLayer);
    }
    status.textContent = `${data.equations} equations · ${shown.length} nodes in view${detailed ? '' : ' (zoom in for labels)'}`;
  }

  function drawNode(layer, n) {
    const P = placed;
    const group = data.children[n];
    let cls = `node ${KINDS[data.kind[n]]}`;
    if (data.collective[n]) cls += ' collective';
    if (group) cls += open[n] ? ' group open' : ' group';
    if (n === selected) cls += ' selected';
    const g = el('g', { class: cls, id: `n${n}`, 'data-node': n }, layer);
    el('title', {}, g).textContent = data.text[n];
    el('rect', { x: P.nx[n], y: P.ny[n], width: P.nw[n], height: P.nh[n] }, g);
    const lines = data.lines[n];
    let y = P.ny[n] + 15;
    for (const line of open[n] ? lines.slice(0, 1) : lines) {
      text(g, P.nx[n] + 7, y, line);
      y += M.LINE_HEIGHT;
    }
    // Each value's label under its port, above where its edges leave.
    if (scale > 0.45) {
      data.valueLabels[n].forEach((label, port) => {
        if (label >= 0) text(g, outPort(n, port)[0], P.ny[n] + P.nh[n] + 11, data.types[label], 'value-label');
      });
    }
    if (group) {
      const bx = P.nx[n] + P.nw[n] - 16;
      const t = el('g', { class: 'toggle', 'data-toggle': n }, g);
      el('rect', { x: bx, y: P.ny[n] + 3, width: 13, height: 13 }, t);
      text(t, bx + 3, P.ny[n] + 13, open[n] ? '−' : '+');
    }
  }

  // ---- view ----
  function centreOn(n) {
    const rect = svg.getBoundingClientRect();
    if (scale < 0.6) scale = 1;
    tx = rect.width / 2 - (placed.nx[n] + placed.nw[n] / 2) * scale;
    ty = rect.height / 3 - placed.ny[n] * scale;
    redraw();
  }

  function isInView(n) {
    const rect = svg.getBoundingClientRect();
    const sx = placed.nx[n] * scale + tx;
    const sy = placed.ny[n] * scale + ty;
    return sx >= 0 && sy >= 0 && sx + placed.nw[n] * scale <= rect.width && sy + placed.nh[n] * scale <= rect.height;
  }

  function fit() {
    const rect = svg.getBoundingClientRect();
    scale = Math.min(rect.width / (placed.width + 20), rect.height / (placed.height + 20), 1);
    tx = 10;
    ty = 10;
    redraw();
  }

  function zoomAt(factor, cx, cy) {
    const next = Math.min(4, Math.max(0.0005, scale * factor));
    tx = cx - (cx - tx) * (next / scale);
    ty = cy - (cy - ty) * (next / scale);
    scale = next;
    redraw();
  }

  /** Opens every group around node n; true when one was closed. */
  function reveal(n) {
    let changed = false;
    for (let o = data.blocks.owner[data.block[n]]; o >= 0; o = data.blocks.owner[data.block[o]]) {
      if (!open[o]) {
        open[o] = 1;
        changed = true;
      }
    }
    if (changed) place();
    return changed;
  }

  function select(n, fromEditor) {
    selected = n;
    reveal(n);
    if (!isInView(n)) centreOn(n);
    redraw();
    document.body.setAttribute('data-selected', String(n));
    if (vscode && !fromEditor) {
      const r = data.range;
      vscode.postMessage({ type: 'select', node: n, range: [r[4 * n], r[4 * n + 1], r[4 * n + 2], r[4 * n + 3]] });
    }
  }

  function toggle(n) {
    open[n] = open[n] ? 0 : 1;
    place();
    redraw();
  }

  const before = (l, c, L, C) => l < L || (l === L && c <= C);
  function holds(n, line, character) {
    const r = data.range;
    return before(r[4 * n], r[4 * n + 1], line, character) && before(line, character, r[4 * n + 2], r[4 * n + 3]);
  }

  // The innermost equation whose range holds (line, character).
  function equationAt(line, character) {
    const r = data.range;
    let best = -1;
    for (let n = 0; n < N; n++) {
      if (data.kind[n] !== EQN) continue;
      if (holds(n, line, character)) {
        if (best < 0 || before(r[4 * best], r[4 * best + 1], r[4 * n], r[4 * n + 1])) best = n;
      }
    }
    return best;
  }

  // ---- search ----
  const search = document.getElementById('search');
  const searchCount = document.getElementById('search-count');
  let matches = [];
  let matchAt = -1;
  function runSearch(step) {
    const q = search.value.trim().toLowerCase();
    if (!q) {
      matches = [];
      searchCount.textContent = '';
      return;
    }
    if (step === 0 || !matches.query || matches.query !== q) {
      matches = [];
      for (let n = 0; n < N; n++) {
        if (data.label[n].toLowerCase().includes(q) || data.text[n].toLowerCase().includes(q)) matches.push(n);
      }
      matches.query = q;
      matchAt = -1;
    }
    if (!matches.length) {
      searchCount.textContent = 'no match';
      return;
    }
    matchAt = (matchAt + (step < 0 ? -1 : 1) + matches.length) % matches.length;
    searchCount.textContent = `${matchAt + 1} of ${matches.length}`;
    const n = matches[matchAt];
    selected = n;
    reveal(n);
    centreOn(n);
    document.body.setAttribute('data-selected', String(n));
  }
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      runSearch(e.shiftKey ? -1 : 1);
    }
  });
  search.addEventListener('input', () => {
    matches = [];
    searchCount.textContent = '';
  });

  // ---- events ----
  document.getElementById('zoom-in').onclick = () => zoomAt(1.25, svg.clientWidth / 2, svg.clientHeight / 2);
  document.getElementById('zoom-out').onclick = () => zoomAt(0.8, svg.clientWidth / 2, svg.clientHeight / 2);
  document.getElementById('fit').onclick = fit;
  document.getElementById('expand-all').onclick = () => {
    for (const k of Object.keys(data.children)) open[Number(k)] = 1;
    place();
    redraw();
  };
  document.getElementById('collapse-all').onclick = () => {
    open.fill(0);
    place();
    redraw();
  };
  svg.addEventListener('wheel', (e) => {
    e.preventDefault();
    const rect = svg.getBoundingClientRect();
    if (e.ctrlKey || e.metaKey || !e.shiftKey) {
      zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - rect.left, e.clientY - rect.top);
    } else {
      tx -= e.deltaX || e.deltaY;
      redraw();
    }
  }, { passive: false });
  let drag = null;
  svg.addEventListener('pointerdown', (e) => {
    drag = { x: e.clientX, y: e.clientY, tx, ty, moved: false };
  });
  window.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (drag.moved) {
      tx = drag.tx + dx;
      ty = drag.ty + dy;
      redraw();
    }
  });
  window.addEventListener('pointerup', () => {
    setTimeout(() => (drag = null), 0);
  });
  svg.addEventListener('click', (e) => {
    if (drag && drag.moved) return;
    const toggleEl = e.target.closest('[data-toggle]');
    if (toggleEl) {
      toggle(Number(toggleEl.getAttribute('data-toggle')));
      return;
    }
    const nodeEl = e.target.closest('[data-node]');
    if (nodeEl) select(Number(nodeEl.getAttribute('data-node')), false);
  });
  svg.addEventListener('dblclick', (e) => {
    const nodeEl = e.target.closest('[data-node]');
    if (nodeEl && data.children[nodeEl.getAttribute('data-node')]) toggle(Number(nodeEl.getAttribute('data-node')));
  });
  window.addEventListener('resize', redraw);
  window.addEventListener('message', (e) => {
    const m = e.data;
    if (m && m.type === 'reveal') {
      if (selected >= 0 && holds(selected, m.line, m.character)) return;
      const n = equationAt(m.line, m.character);
      if (n >= 0) select(n, true);
    }
  });

  // The viewer's functions, for scripts that drive it (the editor's tests).
  window.jaxprGraph = { select, toggle, equationAt, fit, nodeCount: N };

  place();
  draw();
  document.body.setAttribute('data-ready', '1');
  if (vscode) vscode.postMessage({ type: 'ready' });
})();
