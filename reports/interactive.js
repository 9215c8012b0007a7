// The reports' one script, written inline by reports/html.py. Line charts are redrawn from their data-chart JSON
// with hover values, series toggled from the legend, drag to zoom (double-click resets), smoothing, a log y-axis
// and an alternative x-axis; tables marked sortable get clickable headers and a filter box. Text from data is only
// ever set as textContent or an attribute value, never parsed as markup.
'use strict';
(() => {
  const M = Math;

  function svgEl(tag, attrs, parent, text) {  // always into a parent: an element of the SVG namespace
    const e = document.createElementNS(parent.namespaceURI, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return add(e, parent, text);
  }

  function el(tag, cls, parent, text) {
    const e = document.createElement(tag);
    e.className = cls;
    return add(e, parent, text);
  }

  function add(e, parent, text) {
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  const clear = e => { while (e.firstChild) e.removeChild(e.firstChild); };
  const sig = (v, n) => v && M.abs(v) < 1e-4 ? v.toExponential(n - 1).replace(/\.?0+e/, 'e') : String(+v.toPrecision(n));
  const label = v => M.abs(v) >= 1000 ? M.round(v).toLocaleString('en-US') : sig(v, 3);
  const value = v => M.abs(v) >= 1e5 ? M.round(v).toLocaleString('en-US') : sig(v, 4);

  function ticks(lo, hi, n) {  // round values 1, 2 or 5 times a power of ten apart, as reports/markup.py's
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / n, p = M.pow(10, M.floor(M.log10(raw)));
    const step = p * [1, 2, 5, 10].find(m => m * p >= raw), first = M.ceil(lo / step) * step, out = [];
    for (let i = 0; first + i * step <= hi + step * 1e-9; i++) out.push(first + i * step);
    return out;
  }

  function logTicks(lo, hi) {  // decades, else 1-2-5, else finer steps, else round linear values
    for (const set of [[1], [1, 2, 5], [1, 1.5, 2, 3, 4, 5, 6, 8]]) {
      const out = [];
      for (let k = M.floor(M.log10(lo)); k <= M.floor(M.log10(hi)); k++) {
        for (const m of set) if (m * 10 ** k >= lo && m * 10 ** k <= hi) out.push(m * 10 ** k);
      }
      if (out.length >= 3) return out;
    }
    return ticks(lo, hi, 5).filter(t => t > 0);
  }

  function nearest(xs, x) {  // the index of the sorted xs nearest x
    let lo = 0, hi = xs.length - 1;
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (xs[mid] <= x) lo = mid; else hi = mid; }
    return M.abs(xs[hi] - x) < M.abs(xs[lo] - x) ? hi : lo;
  }

  function mapped(xs, vs, x) {  // a monotone mapping from xs to vs at x, interpolated
    const k = nearest(xs, x), j = x < xs[k] ? k - 1 : k + 1;
    return j < 0 || j >= xs.length || xs[j] === xs[k] ? vs[k] : vs[k] + (x - xs[k]) / (xs[j] - xs[k]) * (vs[j] - vs[k]);
  }

  function smooth(ys, w) {  // an exponential moving average, debiased at the start (as TensorBoard and W&B)
    let last = 0;
    return ys.map((y, i) => (last = last * w + (1 - w) * y) / (1 - w ** (i + 1)));
  }

  function extent(vs) {
    const lo = M.min(...vs), hi = M.max(...vs);
    return hi > lo ? [lo, hi] : [lo - (M.abs(lo) * 0.05 || 1), hi + (M.abs(hi) * 0.05 || 1)];
  }

  function lineChart(wrap, index) {
    const d = JSON.parse(wrap.getAttribute('data-chart')), svg = wrap.querySelector('svg.chart');
    const [left, top, right, bottom] = d.box, tip = el('div', 'tip hidden', wrap);
    const st = {hidden: d.series.map(() => false), smooth: 0, log: false, alt: false, zoom: null};
    let view, drag = null, lines = [];
    const alt = d.alt && [0, 1].map(c => d.alt.points.map(p => p[c])), tokens = x => mapped(alt[0], alt[1], x);
    const toAxis = x => st.alt ? tokens(x) : x, fromAxis = x => st.alt ? mapped(alt[1], alt[0], x) : x;
    const hide = (e, i) => e.classList.toggle('hidden', st.hidden[i]);

    function render() {  // each series on the chosen axes, its y smoothed; then the axes' ranges and the drawing
      lines = d.series.map((s, i) => {
        const pts = st.log ? s.points.filter(p => p[1] > 0) : s.points, ys = pts.map(p => p[1]);
        return {i, s, xs: pts.map(p => toAxis(p[0])), ys, shown: st.smooth > 0 ? smooth(ys, st.smooth) : ys};
      }).filter(l => l.xs.length);
      if (!lines.length) return;
      const xr = st.zoom ? st.zoom.map(toAxis) : extent([].concat(...lines.map(l => l.xs))), ys = [];
      lines.forEach(l => l.xs.forEach((x, k) => { if (x >= xr[0] && x <= xr[1]) ys.push(l.shown[k]); }));
      let yr = extent(ys.length ? ys : [1, 2]);
      const f = st.log ? M.log10 : v => v, pad = st.log ? 0 : (yr[1] - yr[0]) * 0.04;
      yr = [yr[0] - pad, yr[1] + pad];
      const y0 = f(yr[0]), y1 = f(yr[1]);
      view = {xr, yr, xOf: x => left + (x - xr[0]) / (xr[1] - xr[0]) * (right - left),
        yOf: y => top + (1 - (f(y) - y0) / (y1 - y0)) * (bottom - top),
        xAt: px => xr[0] + (px - left) / (right - left) * (xr[1] - xr[0])};
      draw(view);
    }

    function draw({xr, yr, xOf, yOf}) {
      clear(svg);
      const clip = 'lc-clip-' + index, text = (a, t) => svgEl('text', Object.assign({'font-size': 10}, a), svg, t);
      const pts = (l, ys) => l.xs.map((x, k) => xOf(x).toFixed(1) + ',' + yOf(ys[k]).toFixed(1)).join(' ');
      svgEl('rect', {x: left, y: top - 4, width: right - left, height: bottom - top + 8}, svgEl('clipPath', {id: clip}, svg));
      svgEl('path', {d: `M${left},${top}V${bottom}H${right}`, stroke: '#999', fill: 'none'}, svg);
      (st.log ? logTicks(...yr) : ticks(...yr, 5)).forEach(t => text({'class': 'ytick', x: left - 4, y: yOf(t) + 4,
        'text-anchor': 'end'}, st.log && (t >= 1e4 || t < 1e-3) ? t.toExponential(0).replace('+', '') : label(t)));
      ticks(...xr, 6).forEach(t => text({'class': 'xtick', x: xOf(t), y: bottom + 14, 'text-anchor': 'middle'}, label(t)));
      text({'class': 'xlabel', x: right, y: bottom + 27, 'font-size': 11, fill: '#666', 'text-anchor': 'end'},
        st.alt ? d.alt.label : d.x_label);
      if (d.y_label) text({'class': 'ylabel', x: left, y: top - 8, 'font-size': 11, fill: '#666'}, d.y_label + (st.log ? ' (log)' : ''));
      const plot = svgEl('g', {'clip-path': `url(#${clip})`}, svg);
      for (const [at, name] of d.markers) {
        const x = xOf(toAxis(at)), end = x > 0.6 * (right + 10);
        svgEl('title', {}, svgEl('line', {'class': 'marker', x1: x, x2: x, y1: top, y2: bottom, stroke: '#888',
          'stroke-dasharray': '4 3'}, plot), name);
        svgEl('text', {x: end ? x - 3 : x + 3, y: top + 22, 'font-size': 10, fill: '#555', 'text-anchor': end ? 'end' : 'start'}, plot, name);
      }
      for (const l of lines) {
        if (st.smooth > 0 && l.xs.length > 1) {
          hide(svgEl('polyline', {'class': 'raw', 'data-i': l.i, fill: 'none', stroke: l.s.color, 'stroke-opacity': 0.25,
            points: pts(l, l.ys)}, plot), l.i);
        }
        const e = l.xs.length > 1
          ? svgEl('polyline', {points: pts(l, l.shown), fill: 'none', stroke: l.s.color, 'stroke-width': 1.5}, plot)
          : svgEl('circle', {cx: xOf(l.xs[0]), cy: yOf(l.shown[0]), r: 3.5, fill: l.s.color}, plot);
        e.setAttribute('class', l.xs.length > 1 ? 'series' : 'series point');
        e.setAttribute('data-i', l.i);
        e.setAttribute('data-name', l.s.name);
        svgEl('title', {}, e, l.s.name);
        hide(e, l.i);
      }
      for (const [x, y, name] of d.flags) {
        if (st.log && y <= 0) continue;
        svgEl('title', {}, svgEl('circle', {'class': 'flag', cx: xOf(toAxis(x)), cy: yOf(y), r: 5, fill: 'none',
          stroke: '#e15759', 'stroke-width': 2}, plot), name);
      }
      view.guide = svgEl('line', {'class': 'guide hidden', y1: top, y2: bottom, stroke: '#555', 'stroke-width': 0.7}, svg);
      view.band = svgEl('rect', {'class': 'hidden', y: top, height: bottom - top, fill: '#4e79a7', 'fill-opacity': 0.15}, svg);
    }

    function hover(px, py) {  // the values of every shown series at the x nearest the pointer
      const shown = lines.filter(l => !st.hidden[l.i]);
      if (!view || !shown.length || px < left || px > right) return leave();
      const x = view.xAt(px);
      const best = shown.map(l => l.xs[nearest(l.xs, x)]).reduce((a, b) => M.abs(b - x) < M.abs(a - x) ? b : a);
      const step = fromAxis(best);
      clear(tip);
      el('b', '', tip, d.x_label + ' ' + value(M.round(step * 1e6) / 1e6)
        + (alt ? ' \u00b7 ' + d.alt.label + ' ' + value(tokens(step)) : ''));
      for (const l of shown) {
        const k = nearest(l.xs, best), row = el('div', 'tip-row', tip);
        el('i', '', row).style.background = l.s.color;
        add(document.createTextNode(l.s.name + ': ' + value(l.shown[k]) + (st.smooth > 0 ? ` (raw ${value(l.ys[k])})` : '')), row);
      }
      view.guide.setAttribute('x1', view.xOf(best));
      view.guide.setAttribute('x2', view.xOf(best));
      view.guide.classList.remove('hidden');
      tip.classList.remove('hidden');
      const s = svg.getBoundingClientRect(), w = wrap.getBoundingClientRect();
      tip.style.left = s.left - w.left + px + (px > (left + right) / 2 ? -tip.offsetWidth - 12 : 12) + 'px';
      tip.style.top = s.top - w.top + M.max(py - 10, 0) + 'px';
    }

    function leave() { tip.classList.add('hidden'); if (view) view.guide.classList.add('hidden'); }

    const pixel = e => { const r = svg.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    const span = (a, b) => [M.max(left, M.min(a, b)), M.min(right, M.max(a, b))];
    svg.addEventListener('mousemove', e => {
      const [px, py] = pixel(e);
      if (drag !== null) {
        const [a, b] = span(drag, px);
        view.band.setAttribute('x', a);
        view.band.setAttribute('width', b - a);
        view.band.classList.remove('hidden');
      }
      hover(px, py);
    });
    svg.addEventListener('mouseleave', leave);
    svg.addEventListener('mousedown', e => {
      const [px] = pixel(e);
      if (e.button === 0 && px >= left && px <= right) { drag = px; e.preventDefault(); }
    });
    svg.addEventListener('mouseup', e => {
      if (drag === null) return;
      const [a, b] = span(drag, pixel(e)[0]);
      drag = null;
      view.band.classList.add('hidden');
      if (b - a >= 4) { st.zoom = [fromAxis(view.xAt(a)), fromAxis(view.xAt(b))]; render(); }
    });
    svg.addEventListener('dblclick', () => { st.zoom = null; render(); });

    wrap.querySelectorAll('.legend span').forEach((key, i) => {
      key.title = 'click to hide or show';
      key.addEventListener('click', () => {
        st.hidden[i] = !st.hidden[i];
        key.classList.toggle('off', st.hidden[i]);
        svg.querySelectorAll(`[data-i="${i}"]`).forEach(e => hide(e, i));
      });
    });
    controls(wrap, svg, st, render, d);
    render();
  }

  function controls(wrap, svg, st, render, d) {  // smoothing, log y and the x-axis, above the chart
    const bar = wrap.insertBefore(el('div', 'chart-controls'), svg), input = (parent, cls, type) => {
      const e = el('input', cls, parent);
      e.type = type;
      return e;
    };
    const smoothing = el('label', '', bar, 'smoothing '), slider = input(smoothing, 'smoothing', 'range');
    const weight = el('span', '', smoothing, '0');
    Object.assign(slider, {min: 0, max: 0.99, step: 0.01, value: 0});
    slider.addEventListener('input', () => { st.smooth = +slider.value; weight.textContent = slider.value; render(); });
    const logLabel = el('label', '', bar), log = input(logLabel, 'log-y', 'checkbox');
    log.disabled = !d.series.some(s => s.points.some(p => p[1] > 0));
    add(document.createTextNode(' log y'), logLabel);
    log.addEventListener('change', () => { st.log = log.checked; render(); });
    if (d.alt) {
      const pick = el('select', 'x-axis', el('label', '', bar, 'x-axis '));
      [d.x_label, d.alt.label].forEach((name, k) => { el('option', '', pick, name).value = k; });
      pick.addEventListener('change', () => { st.alt = pick.value === '1'; render(); });
    }
    el('span', 'note', bar, 'drag to zoom, double-click to reset');
  }

  function sortable(table) {
    const body = table.tBodies[0], filter = table.parentNode.insertBefore(el('input', 'table-filter'), table);
    Object.assign(filter, {type: 'search', placeholder: 'filter rows'});
    filter.addEventListener('input', () => {
      const q = filter.value.toLowerCase();
      for (const r of body.rows) r.classList.toggle('hidden', !r.textContent.toLowerCase().includes(q));
    });
    [...table.tHead.rows[0].cells].forEach((th, c) => th.addEventListener('click', () => {
      const dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1, numeric = th.classList.contains('num');
      for (const h of th.parentNode.cells) h.removeAttribute('aria-sort');
      th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      const key = r => {
        const cell = r.cells[c], v = cell && (numeric ? parseFloat(cell.getAttribute('data-value')) : cell.textContent);
        return v === undefined || v === '' || Number.isNaN(v) ? null : v;
      };
      [...body.rows].map(r => [key(r), r]).sort(([x], [y]) => x === null || y === null ? (x === null) - (y === null)
        : dir * (numeric ? x - y : x.localeCompare(y))).forEach(([, r]) => body.appendChild(r));  // empty cells last
    }));
  }

  for (const [selector, init] of [['.linechart[data-chart]', lineChart], ['table.sortable', sortable]]) {
    document.querySelectorAll(selector).forEach((e, i) => {
      try { init(e, i); } catch (err) { console.error('report script: ' + err); }  // the others still work
    });
  }
})();
