// The stylesheet and script of the HTML report (report/html_report.h). The
// script reads the JSON of <script id="swapplan-data"> and draws:
//   #summary   the verdict, budget, peak, best and runner-up
//   #memory    SVG step curves per local op: unswapped (grey), each policy
//              (palette, legend checkboxes toggle them), each with its
//              allocator model's reserved bytes (same colour, dashed),
//              budget (red, dashed)
//   #timeline  SVG lanes compute / d2h / h2d of the selected policy; wheel
//              zooms around the cursor, drag pans; spans narrower than half
//              a pixel are merged so a view draws O(width) rectangles
//   #swapped   the selected policy's items, sortable by column
//   #compare   one row per planner; #limits what limits each
// and finally sets <body data-report-status="ok"> ("error: ..." on failure).
// kPageHelpers holds what the replay report's script (replay_script.cc)
// shares with it (page_script.h).
#include "report/page_script.h"

namespace swapplan::internal_report {

const char kPageStyle[] = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 18px 0 6px; border-bottom: 1px solid #ddd; }
#summary p { margin: 2px 0; }
.verdict { font-size: 16px; font-weight: 600; }
.ok { color: #1a7f37; } .bad { color: #b42318; } .warn { color: #9a6700; }
#error { background: #fdecea; color: #b42318; padding: 8px; border: 1px solid #b42318; }
svg { display: block; background: #fff; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
.axis line, .grid line { stroke: #ccc; shape-rendering: crispEdges; }
.curve { fill: none; stroke-width: 2; shape-rendering: crispEdges; }
#legend label { margin-right: 14px; white-space: nowrap; }
.swatch { display: inline-block; width: 14px; height: 4px; vertical-align: middle; margin: 0 4px; }
.controls { margin: 4px 0; } .hint { color: #777; font-size: 12px; }
#timeline svg { cursor: grab; user-select: none; }
#tl-info { font-family: ui-monospace, monospace; font-size: 12px; min-height: 1.4em; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f6f8fa; cursor: pointer; }
td { white-space: nowrap; }
td.l, th.l { text-align: left; }
td.l:first-child { white-space: normal; }
tr.best td { background: #eaf6ec; } tr.second td { background: #f3f8fd; }
tr.bad td { background: #fdecea; }
footer { margin-top: 24px; color: #888; font-size: 12px; }
)CSS";

const char kPageHelpers[] = R"JS(
  const body = document.body;
  function fail(msg) {
    body.setAttribute('data-report-status', 'error: ' + msg);
    const e = document.getElementById('error');
    e.hidden = false;
    e.textContent = 'The report could not be drawn: ' + msg;
  }
  window.addEventListener('error', function (ev) { fail(String(ev.message)); });
  const SVG = 'http://www.w3.org/2000/svg';
  const PALETTE = ['#1f77b4', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf',
                   '#bcbd22', '#ff7f0e'];
  const UNSWAPPED = '#7f7f7f', BUDGET = '#d62728';
  const LANE_COLORS = {op: '#4e79a7', recompute: '#b07aa1', stall: '#e15759',
                       d2h: '#59a14f', h2d: '#f28e2b'};

  function el(tag, attrs, parent, text) {
    const e = tag.startsWith('svg:') ? document.createElementNS(SVG, tag.slice(4))
                                     : document.createElement(tag);
    for (const k in (attrs || {})) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmtBytes(b) {
    if (b === null || b === undefined) return '-';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = Math.abs(b), u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (b < 0 ? '-' : '') + (u === 0 ? v.toFixed(0) : v.toFixed(2)) + ' ' + units[u];
  }
  function fmtNs(ns) {
    if (ns === null || ns === undefined) return '-';
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
    return ns.toFixed(0) + ' ns';
  }
  function fmtPct(f) { return f === null || f === undefined ? '-' : (f >= 0 ? '+' : '') + (100 * f).toFixed(2) + '%'; }
  function niceStep(range, count) {
    const raw = range / Math.max(1, count), p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  const data = JSON.parse(document.getElementById('swapplan-data').textContent);

  // A page's start-up: runs `draw` (the page's sections), then marks the
  // page drawn (data-report-status "ok") unless it failed; an exception
  // goes to fail() with its stack.
  function start(draw) {
    try {
      draw();
      if (!body.getAttribute('data-report-status').startsWith('error')) {
        body.setAttribute('data-report-status', 'ok');
      }
    } catch (e) {
      fail(e && e.stack ? e.stack : String(e));
    }
  }

  function table(parent, columns, rows, rowClass) {
    const t = el('table', {}, parent), head = el('tr', {}, el('thead', {}, t));
    const tb = el('tbody', {}, t);
    let sortKey = null, asc = true;
    function fill() {
      while (tb.firstChild) tb.removeChild(tb.firstChild);
      const shown = rows.slice();
      if (sortKey !== null) {
        shown.sort(function (a, b) {
          const x = columns[sortKey].key(a), y = columns[sortKey].key(b);
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
      }
      for (const r of shown.slice(0, 2000)) {
        const tr = el('tr', {class: rowClass ? rowClass(r) : ''}, tb);
        for (const c of columns) el('td', {class: c.left ? 'l' : ''}, tr, c.text(r));
      }
      if (shown.length > 2000) el('td', {colspan: columns.length, class: 'l'}, el('tr', {}, tb), (shown.length - 2000) + ' more rows');
    }
    columns.forEach(function (c, i) {
      const th = el('th', {class: c.left ? 'l' : ''}, head, c.title);
      th.addEventListener('click', function () { asc = sortKey === i ? !asc : !c.left ? false : true; sortKey = i; fill(); });
    });
    fill();
    return t;
  }
)JS";

const char kPageScript[] = R"JS(
  const n = data.num_ops;
  const opName = function (i) {
    return i >= 0 && i < n ? data.op_names[data.ops.name[i]] : '?';
  };

  // ---- summary ----
  function summary() {
    const s = document.getElementById('summary'), a = data.advice;
    const best = data.compare.find(function (r) { return r.planner === a.best; });
    let verdict;
    if (a.fits_without_swapping) {
      verdict = el('p', {class: 'verdict ok'}, s, 'Fits without swapping: unswapped peak ' +
          fmtBytes(data.peak_unswapped_bytes) + ', ' + fmtBytes(a.headroom_bytes) + ' under the budget.');
    } else if (best) {
      verdict = el('p', {class: 'verdict warn'}, s, 'Does not fit without swapping (' +
          fmtBytes(-a.headroom_bytes) + ' over the budget); best policy: ' + best.planner + ', peak ' +
          fmtBytes(best.peak_with_policy_bytes) + ', overhead ' + fmtPct(best.overhead_vs_ideal_fraction) + '.');
    } else {
      verdict = el('p', {class: 'verdict bad'}, s, 'Nothing fits: no planner reaches the budget (' +
          fmtBytes(-a.headroom_bytes) + ' over it without swapping).');
    }
    el('p', {}, s, 'trace ' + data.trace + ', iteration ' + data.iteration + ' (' + n +
        ' ops, op durations ' + data.op_durations + ')');
    el('p', {}, s, 'budget ' + fmtBytes(data.budget_bytes) + '; unswapped peak ' +
        fmtBytes(data.peak_unswapped_bytes) + ' at op ' + data.peak_unswapped_op + ' (' +
        opName(data.peak_unswapped_op) + '); persistent ' + fmtBytes(data.persistent_bytes) +
        '; ideal iteration ' + fmtNs(data.ideal_iteration_time_ns));
    if (data.device) el('p', {}, s, 'device ' + data.device);
    if (data.link) el('p', {}, s, 'link ' + data.link);
    if (data.compute) el('p', {}, s, 'compute ' + data.compute);
    if (a.runner_up) el('p', {}, s, 'best ' + a.best + ', runner-up ' + a.runner_up);
    for (const w of data.warnings) el('p', {class: 'warn'}, s, 'warning: ' + w);
    return verdict;
  }

  // ---- memory curves ----
  function memory() {
    const W = 1000, H = 340, L = 80, R = 12, T = 12, B = 36, PW = W - L - R, PH = H - T - B;
    // Each allocated-bytes curve with its reserved-bytes curve (dashed).
    const rsv = data.reserved || {};
    const series = [{name: 'unswapped', color: UNSWAPPED, values: data.unswapped_bytes, on: true,
                     reserved: rsv.unswapped_bytes || [], reserved_peak: rsv.peak_unswapped_bytes}];
    data.policies.forEach(function (p, i) {
      series.push({name: p.name, color: PALETTE[i % PALETTE.length], values: p.bytes_in_use,
                   on: p.featured || data.policies.length <= 3, reserved: p.reserved_bytes || [],
                   reserved_peak: p.reserved_peak_bytes});
    });
    let maxY = data.budget_bytes, maxReserved = 0;
    for (const s of series) {
      for (const v of s.values) if (v > maxY) maxY = v;
      for (const v of s.reserved) if (v > maxReserved) maxReserved = v;
    }
    // Reserved curves far above the allocated ones (a small trace: the
    // allocator's smallest segment is 2 MiB) would flatten them: the axis
    // then follows the allocated curves and the reserved ones are clipped.
    const clipped = maxReserved > 2 * maxY;
    if (!clipped && maxReserved > maxY) maxY = maxReserved;
    maxY = maxY * 1.05 || 1;
    const svg = el('svg:svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, id: 'memory-svg'},
                   document.getElementById('memory'));
    const y = function (v) { return T + PH * (1 - v / maxY); };
    const grid = el('svg:g', {class: 'grid'}, svg);
    // Byte ticks at round multiples of the largest binary unit below maxY.
    const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(Math.max(1, maxY)) / Math.log(1024))));
    const step = niceStep(maxY / unit, 5) * unit;
    for (let v = 0; v <= maxY; v += step) {
      el('svg:line', {x1: L, x2: W - R, y1: y(v), y2: y(v)}, grid);
      el('svg:text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end'}, svg, fmtBytes(v));
    }
    const xs = niceStep(n, 8);
    for (let i = 0; i <= n; i += xs) {
      const x = L + PW * i / Math.max(1, n);
      el('svg:line', {x1: x, x2: x, y1: T, y2: T + PH}, grid);
      el('svg:text', {x: x, y: H - B + 16, 'text-anchor': 'middle'}, svg, String(i));
    }
    el('svg:text', {x: L + PW / 2, y: H - 4, 'text-anchor': 'middle'}, svg, 'op (within the iteration)');
    // Step path, one column per pixel at most (the maximum of its ops).
    function path(values) {
      const cols = Math.min(values.length, PW);
      let d = '';
      for (let c = 0; c < cols; c++) {
        const a = Math.floor(c * values.length / cols), b = Math.floor((c + 1) * values.length / cols);
        let v = 0;
        for (let k = a; k < Math.max(b, a + 1); k++) v = Math.max(v, values[k]);
        v = Math.min(v, maxY);
        const x0 = (L + PW * c / cols).toFixed(1), x1 = (L + PW * (c + 1) / cols).toFixed(1);
        d += (c === 0 ? 'M' + x0 + ' ' + y(v).toFixed(1) : 'V' + y(v).toFixed(1)) + 'H' + x1;
      }
      return d;
    }
    const legend = document.getElementById('legend');
    series.forEach(function (s, i) {
      const p = el('svg:path', {class: 'curve', d: path(s.values), stroke: s.color,
                                'data-series': s.name}, svg);
      el('svg:title', {}, p, s.name);
      const paths = [p];
      if (s.reserved.length > 0) {
        const r = el('svg:path', {class: 'curve reserved', d: path(s.reserved), stroke: s.color,
                                  'stroke-dasharray': '5 3', 'data-series': s.name + ' reserved'},
                     svg);
        el('svg:title', {}, r, s.name + ' (reserved)');
        paths.push(r);
      }
      paths.forEach(function (q) { q.style.display = s.on ? '' : 'none'; });
      const lab = el('label', {}, legend);
      const cb = el('input', {type: 'checkbox'}, lab);
      cb.checked = s.on;
      cb.addEventListener('change', function () {
        paths.forEach(function (q) { q.style.display = cb.checked ? '' : 'none'; });
      });
      el('span', {class: 'swatch', style: 'background:' + s.color}, lab);
      const peaks = [];
      if (i > 0) peaks.push('peak ' + fmtBytes(data.policies[i - 1].peak_bytes));
      if (s.reserved_peak !== undefined) peaks.push('reserved ' + fmtBytes(s.reserved_peak));
      lab.appendChild(document.createTextNode(s.name + (peaks.length ? ' (' + peaks.join(', ') + ')' : '')));
    });
    el('svg:line', {x1: L, x2: W - R, y1: y(data.budget_bytes), y2: y(data.budget_bytes),
                    stroke: BUDGET, 'stroke-width': 2, 'stroke-dasharray': '8 4',
                    'shape-rendering': 'crispEdges', id: 'budget-line'}, svg);
    el('svg:text', {x: W - R - 4, y: y(data.budget_bytes) - 5, 'text-anchor': 'end', fill: BUDGET},
       svg, 'budget ' + fmtBytes(data.budget_bytes));
    const lab = el('span', {}, legend);
    el('span', {class: 'swatch', style: 'background:' + BUDGET}, lab);
    lab.appendChild(document.createTextNode('budget'));
    if (clipped) {
      el('span', {}, legend, 'dashed: reserved bytes (' + (rsv.allocator || 'allocator model') +
         '), clipped at the top: their peaks are in the legend');
    } else if (maxReserved > 0) {
      el('span', {}, legend, 'dashed: reserved bytes (' + (rsv.allocator || 'allocator model') + ')');
    }
  }

  // ---- stream timeline ----
  const featured = data.policies.filter(function (p) { return p.featured; });
  const tl = {policy: null, v0: 0, v1: 1, total: 1};
  const TW = 1000, TL = 70, TR = 30, LANE = 30, TT = 8;
  const lanes = [{name: 'compute', kinds: ['op', 'recompute', 'stall']}, {name: 'd2h', kinds: ['d2h']},
                 {name: 'h2d', kinds: ['h2d']}];
  const tsvg = el('svg:svg', {width: TW, height: TT + LANE * 3 + 28, id: 'timeline-svg'},
                  document.getElementById('timeline'));
  // First span (index into the flat array / 3) whose end is >= t.
  function lowerBound(flat, t) {
    let lo = 0, hi = flat.length / 3;
    while (lo < hi) { const m = (lo + hi) >> 1; if (flat[3 * m + 1] < t) lo = m + 1; else hi = m; }
    return lo;
  }
  function drawTimeline() {
    while (tsvg.firstChild) tsvg.removeChild(tsvg.firstChild);
    const p = tl.policy, PW = TW - TL - TR;
    if (!p) { el('svg:text', {x: TL, y: 20}, tsvg, 'no policy to show'); return; }
    const scale = PW / (tl.v1 - tl.v0);
    const x = function (t) { return TL + (t - tl.v0) * scale; };
    let rects = 0;
    lanes.forEach(function (lane, li) {
      const y0 = TT + li * LANE;
      el('svg:text', {x: 4, y: y0 + LANE / 2 + 4}, tsvg, lane.name);
      el('svg:line', {x1: TL, x2: TW - TR, y1: y0 + LANE - 2, y2: y0 + LANE - 2, stroke: '#eee'}, tsvg);
      for (const kind of lane.kinds) {
        const flat = p.timeline[kind];
        let cur = null;
        const emit = function () {
          if (!cur) return;
          el('svg:rect', {x: cur[0].toFixed(1), y: y0 + 3, width: Math.max(0.5, cur[1] - cur[0]).toFixed(1),
                          height: LANE - 8, fill: LANE_COLORS[kind], class: 'span-' + kind}, tsvg);
          rects++;
        };
        for (let i = lowerBound(flat, tl.v0); i < flat.length / 3; i++) {
          const s = flat[3 * i], e = flat[3 * i + 1];
          if (s > tl.v1) break;
          const a = Math.max(TL, x(s)), b = Math.min(TW - TR, x(e));
          if (cur && a <= cur[1] + 0.5) { cur[1] = Math.max(cur[1], b); continue; }
          emit();
          cur = [a, b];
        }
        emit();
      }
    });
    const axisY = TT + LANE * 3 + 12, st = niceStep(tl.v1 - tl.v0, 8);
    for (let t = Math.ceil(tl.v0 / st) * st; t <= tl.v1; t += st) {
      el('svg:line', {x1: x(t), x2: x(t), y1: TT, y2: axisY - 8, stroke: '#f0f0f0'}, tsvg);
      el('svg:text', {x: x(t), y: axisY + 6, 'text-anchor': 'middle'}, tsvg, fmtNs(t));
    }
    document.getElementById('tl-range').textContent =
        fmtNs(tl.v0) + ' to ' + fmtNs(tl.v1) + ' of ' + fmtNs(tl.total) + ' (' + rects + ' spans drawn)';
  }
  function setPolicy(p) {
    tl.policy = p;
    tl.total = 1;
    if (p) {
      for (const k in p.timeline) {
        const f = p.timeline[k];
        if (f.length) tl.total = Math.max(tl.total, f[f.length - 2]);
      }
    }
    tl.v0 = 0;
    tl.v1 = tl.total;
    drawTimeline();
    swapped();
  }
  function zoom(factor, center) {
    const w = Math.min(tl.total, Math.max(1000, (tl.v1 - tl.v0) * factor));
    let v0 = center - (center - tl.v0) * w / (tl.v1 - tl.v0);
    v0 = Math.max(0, Math.min(tl.total - w, v0));
    tl.v0 = v0;
    tl.v1 = v0 + w;
    drawTimeline();
  }
  function timeAt(ev) {
    const r = tsvg.getBoundingClientRect();
    return tl.v0 + (ev.clientX - r.left - TL) * (tl.v1 - tl.v0) / (TW - TL - TR);
  }
  function describe(ev) {
    const p = tl.policy;
    if (!p) return;
    const r = tsvg.getBoundingClientRect(), li = Math.floor((ev.clientY - r.top - TT) / LANE);
    if (li < 0 || li > 2) return;
    const t = timeAt(ev);
    for (const kind of lanes[li].kinds) {
      const flat = p.timeline[kind], i = lowerBound(flat, t);
      if (i < flat.length / 3 && flat[3 * i] <= t) {
        const idx = flat[3 * i + 2], s = flat[3 * i], e = flat[3 * i + 1];
        let what;
        if (kind === 'd2h' || kind === 'h2d') {
          const it = p.swapped[idx];
          what = (kind === 'd2h' ? 'copy out of ' : 'copy in of ') + (it ? it.name + ' (' + fmtBytes(it.size_bytes) + ')' : 'item ' + idx);
        } else {
          what = kind + ' op ' + idx + ' (' + opName(idx) + ', ' + data.phases[data.ops.phase[idx]] + ')';
        }
        document.getElementById('tl-info').textContent = what + ': ' + fmtNs(s) + ' to ' + fmtNs(e) + ' (' + fmtNs(e - s) + ')';
        return;
      }
    }
  }
  function timelineControls() {
    const sel = document.getElementById('tl-policy');
    featured.forEach(function (p, i) { el('option', {value: i}, sel, p.name); });
    sel.addEventListener('change', function () { setPolicy(featured[Number(sel.value)]); });
    document.getElementById('tl-in').addEventListener('click', function () { zoom(0.5, (tl.v0 + tl.v1) / 2); });
    document.getElementById('tl-out').addEventListener('click', function () { zoom(2, (tl.v0 + tl.v1) / 2); });
    document.getElementById('tl-reset').addEventListener('click', function () { zoom(Infinity, 0); });
    tsvg.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      zoom(Math.exp(ev.deltaY * 0.002), timeAt(ev));
    }, {passive: false});
    let drag = null;
    tsvg.addEventListener('mousedown', function (ev) { drag = {x: ev.clientX, v0: tl.v0}; });
    window.addEventListener('mouseup', function () { drag = null; });
    tsvg.addEventListener('mousemove', function (ev) {
      if (!drag) { describe(ev); return; }
      const w = tl.v1 - tl.v0, dt = (drag.x - ev.clientX) * w / (TW - TL - TR);
      tl.v0 = Math.max(0, Math.min(tl.total - w, drag.v0 + dt));
      tl.v1 = tl.v0 + w;
      drawTimeline();
    });
  }

  // ---- tables ----
  function swapped() {
    const d = document.getElementById('swapped');
    while (d.firstChild) d.removeChild(d.firstChild);
    const p = tl.policy;
    if (!p) { el('p', {}, d, 'No policy swaps anything.'); return; }
    el('p', {}, d, p.name + ': ' + p.swapped.length + ' items, ' +
       fmtBytes(p.swapped.reduce(function (s, r) { return s + r.size_bytes; }, 0)) + ' (click a column to sort)');
    table(d, [
      {title: 'tensor', left: true, text: function (r) { return r.name; }, key: function (r) { return r.name; }},
      {title: 'id', text: function (r) { return String(r.tensor_id); }, key: function (r) { return r.tensor_id; }},
      {title: 'size', text: function (r) { return fmtBytes(r.size_bytes); }, key: function (r) { return r.size_bytes; }},
      {title: 'action', left: true, text: function (r) { return r.action; }, key: function (r) { return r.action; }},
      {title: 'out op', text: function (r) { return r.swap_out_op + ' ' + opName(r.swap_out_op); }, key: function (r) { return r.swap_out_op; }},
      {title: 'in op', text: function (r) { return r.swap_in_op + ' ' + opName(r.swap_in_op); }, key: function (r) { return r.swap_in_op; }},
      {title: 'stall caused', text: function (r) { return fmtNs(r.stall_ns); }, key: function (r) { return r.stall_ns; }}
    ], p.swapped);
  }
  function compare() {
    const a = data.advice;
    table(document.getElementById('compare'), [
      {title: 'planner', left: true, text: function (r) { return r.planner + (r.planner === a.best ? ' (best)' : r.planner === a.runner_up ? ' (runner-up)' : ''); }, key: function (r) { return r.planner; }},
      {title: 'status', left: true, text: function (r) { return r.status; }, key: function (r) { return r.status; }},
      {title: 'peak', text: function (r) { return fmtBytes(r.peak_with_policy_bytes); }, key: function (r) { return r.peak_with_policy_bytes; }},
      {title: 'iteration', text: function (r) { return fmtNs(r.iteration_time_ns); }, key: function (r) { return r.iteration_time_ns; }},
      {title: 'overhead', text: function (r) { return fmtPct(r.overhead_vs_ideal_fraction); }, key: function (r) { return r.overhead_vs_ideal_fraction; }},
      {title: 'stall', text: function (r) { return fmtNs(r.stall_ns); }, key: function (r) { return r.stall_ns; }},
      {title: 'recompute', text: function (r) { return fmtNs(r.recompute_ns); }, key: function (r) { return r.recompute_ns; }},
      {title: 'd2h', text: function (r) { return fmtBytes(r.d2h_bytes); }, key: function (r) { return r.d2h_bytes; }},
      {title: 'h2d', text: function (r) { return fmtBytes(r.h2d_bytes); }, key: function (r) { return r.h2d_bytes; }},
      {title: 'items', text: function (r) { return String(r.num_items); }, key: function (r) { return r.num_items; }}
    ], data.compare, function (r) { return r.planner === a.best ? 'best' : r.planner === a.runner_up ? 'second' : ''; });
    const ul = document.getElementById('limits');
    for (const r of data.compare) {
      const li = el('li', {}, ul);
      el('b', {}, li, r.planner);
      li.appendChild(document.createTextNode(': ' + r.note));
    }
  }

  start(function () {
    summary();
    memory();
    timelineControls();
    setPolicy(featured.length ? featured[0] : null);
    compare();
  });
)JS";

}  // namespace swapplan::internal_report
