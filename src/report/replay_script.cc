// The sections and script of the replay report (report/replay_report.h).
// After the shared helpers (page_script.h) the script reads `data` and draws:
//   #summary     the verdict (crash-free or not, OOMs, misses), the replay's
//                settings, device, capacity and budget, totals
//   #memory      SVG: the simulated peak of every runtime iteration (a step
//                curve, blue) against the device capacity (red, dashed) and
//                the planning budget (orange, dashed, when a reserve sets it
//                apart); the stage of each iteration as a background band;
//                a marker per iteration with OOMs (red: unresolved, orange:
//                resolved by passive swaps) or policy misses / uses while
//                off device (purple)
//   #iterations  one row per runtime iteration, sortable by column
//   #inputs      per input signature: which planner served it (policies
//                made by each), planning failures and why none fits
//   #policies    the policies generated: when, by which planner, for which
//                input, planned on how many iterations, used by how many
// and finally sets <body data-report-status="ok"> ("error: ..." on failure).
//
//   peak  |   ___      ____________
//         |__|   |____|            |__   (one step per iteration)
//   cap   |- - - - - - - - - - - - - - -
//         +-----------------------------> runtime iteration
//          WarmUp | GenPolicy | Stable      (background bands)
#include "report/page_script.h"

namespace swapplan::internal_report {

const char kReplayPageBody[] =
    "<section id=\"summary\"></section>\n"
    "<section><h2>Peak memory per iteration</h2><div id=\"legend\"></div>"
    "<div id=\"memory\"></div></section>\n"
    "<section><h2>Iterations</h2><div id=\"iterations\"></div></section>\n"
    "<section><h2>Planner per input</h2><div id=\"inputs\"></div></section>\n"
    "<section><h2>Policies</h2><div id=\"policies\"></div></section>\n";

const char kReplayScript[] = R"JS(
  const rows = data.iterations, t = data.totals;
  const STAGE_BAND = {WarmUp: '#f2f2f2', GenPolicy: '#fff4e0', Stable: '#eaf6ec'};
  const PEAK = PALETTE[0], PLAN_BUDGET = '#ff7f0e', MISS = '#9467bd';

  function summary() {
    const s = document.getElementById('summary');
    const crash = t.num_unresolved_ooms > 0 || t.num_uses_while_off_device > 0;
    const text = crash
        ? 'Would crash: ' + t.num_unresolved_ooms + ' unresolved OOMs, ' + t.num_uses_while_off_device +
          ' uses of a tensor while off device.'
        : t.num_ooms > 0 || t.num_missed > 0
            ? 'Runs, with ' + t.num_ooms + ' OOMs resolved by ' + t.num_passive_swaps +
              ' passive swaps and ' + t.num_missed + ' of ' + t.num_items + ' policy items missed.'
            : 'Runs cleanly: no OOM, no policy item missed.';
    el('p', {class: 'verdict ' + (crash ? 'bad' : t.num_ooms > 0 || t.num_missed > 0 ? 'warn' : 'ok')}, s, text);
    el('p', {}, s, 'trace ' + data.trace + ': ' + t.num_iterations + ' runtime iterations (WarmUp ' +
       t.num_warmup_iterations + ', GenPolicy ' + t.num_genpolicy_iterations + ', Stable ' +
       t.num_stable_iterations + '), ' + fmtNs(t.total_time_ns) + ' simulated');
    el('p', {}, s, 'planner ' + data.planner + ', matcher ' + data.matcher + ', policies keyed by ' +
       data.policies_keyed_by + ', planned on ' + data.plan_on + '; ' + t.num_policies_generated +
       ' policies generated, ' + t.num_plan_failures + ' planning failures');
    el('p', {}, s, 'capacity ' + fmtBytes(data.capacity_bytes) + ', planning budget ' +
       fmtBytes(data.budget_bytes) + '; items ' + t.num_items + ': matched ' + t.num_matched +
       ', mismatched ' + t.num_mismatched + ', missed ' + t.num_missed);
    if (data.device) el('p', {}, s, 'device ' + data.device);
    if (data.link) el('p', {}, s, 'link ' + data.link);
    if (data.compute) el('p', {}, s, 'compute ' + data.compute);
    for (const w of data.warnings) el('p', {class: 'warn'}, s, 'warning: ' + w);
  }

  function memory() {
    const W = 1000, H = 340, L = 80, R = 12, T = 12, B = 36, PW = W - L - R, PH = H - T - B;
    const n = Math.max(1, rows.length);
    let maxY = data.capacity_bytes;
    for (const r of rows) if (r.peak_with_policy_bytes > maxY) maxY = r.peak_with_policy_bytes;
    maxY = maxY * 1.05 || 1;
    const svg = el('svg:svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, id: 'memory-svg'},
                   document.getElementById('memory'));
    const y = function (v) { return T + PH * (1 - v / maxY); };
    const x = function (i) { return L + PW * i / n; };
    rows.forEach(function (r, i) {
      el('svg:rect', {x: x(i), y: T, width: Math.max(0.5, x(i + 1) - x(i)), height: PH,
                      fill: STAGE_BAND[r.stage] || '#fff', class: 'stage-band'}, svg);
    });
    const grid = el('svg:g', {class: 'grid'}, svg);
    const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(Math.max(1, maxY)) / Math.log(1024))));
    const step = niceStep(maxY / unit, 5) * unit;
    for (let v = 0; v <= maxY; v += step) {
      el('svg:line', {x1: L, x2: W - R, y1: y(v), y2: y(v)}, grid);
      el('svg:text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end'}, svg, fmtBytes(v));
    }
    const xs = Math.max(1, niceStep(n, 10));
    for (let i = 0; i <= n; i += xs) {
      el('svg:line', {x1: x(i), x2: x(i), y1: T, y2: T + PH}, grid);
      el('svg:text', {x: x(i), y: H - B + 16, 'text-anchor': 'middle'}, svg, String(i));
    }
    el('svg:text', {x: L + PW / 2, y: H - 4, 'text-anchor': 'middle'}, svg, 'runtime iteration');
    let d = '';
    rows.forEach(function (r, i) {
      d += (i === 0 ? 'M' + x(0).toFixed(1) + ' ' : 'V') + y(r.peak_with_policy_bytes).toFixed(1) + 'H' + x(i + 1).toFixed(1);
    });
    const p = el('svg:path', {class: 'curve', d: d || 'M0 0', stroke: PEAK, 'data-series': 'peak'}, svg);
    el('svg:title', {}, p, 'simulated peak per iteration');
    function hline(v, colour, id, label, dy) {
      el('svg:line', {x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: colour, 'stroke-width': 2,
                      'stroke-dasharray': '8 4', 'shape-rendering': 'crispEdges', id: id}, svg);
      el('svg:text', {x: W - R - 4, y: y(v) + dy, 'text-anchor': 'end', fill: colour}, svg,
         label + ' ' + fmtBytes(v));
    }
    if (data.budget_bytes !== data.capacity_bytes) {
      hline(data.budget_bytes, PLAN_BUDGET, 'plan-budget-line', 'planning budget', 14);
    }
    hline(data.capacity_bytes, BUDGET, 'budget-line', 'capacity', -5);
    rows.forEach(function (r, i) {
      const cx = (x(i) + x(i + 1)) / 2;
      if (r.num_ooms > 0) {
        const c = el('svg:circle', {cx: cx, cy: y(r.peak_with_policy_bytes), r: 5, class: 'marker-oom',
                                    fill: r.num_unresolved_ooms > 0 ? BUDGET : PLAN_BUDGET}, svg);
        el('svg:title', {}, c, 'iteration ' + r.iteration + ': ' + r.num_ooms + ' OOMs, ' +
           r.num_unresolved_ooms + ' unresolved, ' + r.num_passive_swaps + ' passive swaps');
      }
      if (r.num_missed > 0 || r.num_uses_while_off_device > 0) {
        const m = el('svg:rect', {x: cx - 4, y: T + 2, width: 8, height: 8, class: 'marker-miss',
                                  fill: MISS}, svg);
        el('svg:title', {}, m, 'iteration ' + r.iteration + ': ' + r.num_missed + ' items missed, ' +
           r.num_uses_while_off_device + ' uses while off device' +
           (r.first_off_device ? ' (first: ' + r.first_off_device + ')' : ''));
      }
    });
    const legend = document.getElementById('legend');
    const entries = [['peak', PEAK], ['capacity', BUDGET]];
    if (data.budget_bytes !== data.capacity_bytes) entries.push(['planning budget', PLAN_BUDGET]);
    entries.push(['OOM resolved', PLAN_BUDGET], ['OOM unresolved', BUDGET], ['miss / off device', MISS]);
    for (const st in STAGE_BAND) entries.push([st, STAGE_BAND[st]]);
    for (const e of entries) {
      const lab = el('label', {}, legend);
      el('span', {class: 'swatch', style: 'background:' + e[1]}, lab);
      lab.appendChild(document.createTextNode(e[0]));
    }
  }

  function tables() {
    const num = function (k, title) { return {title: title || k.replace(/_/g, ' '), text: function (r) { return String(r[k]); }, key: function (r) { return r[k]; }}; };
    table(document.getElementById('iterations'), [
      num('iteration'), num('trace_iteration'),
      {title: 'stage', left: true, text: function (r) { return r.stage; }, key: function (r) { return r.stage; }},
      {title: 'policy', text: function (r) { return r.policy_id === null ? '-' : String(r.policy_id) + (r.policy_of_other_input ? '*' : ''); }, key: function (r) { return r.policy_id === null ? -1 : r.policy_id; }},
      num('num_items', 'items'), num('num_matched', 'matched'), num('num_missed', 'missed'),
      num('num_mismatched', 'mismatched'), num('num_ooms', 'ooms'),
      num('num_unresolved_ooms', 'unresolved ooms'), num('num_passive_swaps', 'passive swaps'),
      {title: 'off device', left: true, text: function (r) { return r.num_uses_while_off_device ? r.num_uses_while_off_device + ' (first ' + r.first_off_device + ')' : '0'; }, key: function (r) { return r.num_uses_while_off_device; }},
      {title: 'peak', text: function (r) { return fmtBytes(r.peak_with_policy_bytes); }, key: function (r) { return r.peak_with_policy_bytes; }},
      {title: 'time', text: function (r) { return fmtNs(r.iteration_time_ns); }, key: function (r) { return r.iteration_time_ns; }},
      {title: 'stall', text: function (r) { return fmtNs(r.stall_ns); }, key: function (r) { return r.stall_ns; }},
      {title: 'planner', left: true, text: function (r) { return r.policy_planner || '-'; }, key: function (r) { return r.policy_planner || ''; }},
      {title: 'generated', text: function (r) { return r.generated_policy_id === null ? '-' : String(r.generated_policy_id) + (r.generated_by ? ' (' + r.generated_by + ')' : ''); }, key: function (r) { return r.generated_policy_id === null ? -1 : r.generated_policy_id; }},
      {title: 'note', left: true, text: function (r) { return r.plan_error || ''; }, key: function (r) { return r.plan_error || ''; }}
    ], rows, function (r) { return r.num_unresolved_ooms > 0 || r.num_uses_while_off_device > 0 ? 'bad' : ''; });
    const ind = document.getElementById('inputs');
    if (!data.inputs.length) {
      el('p', {}, ind, 'No input was replayed.');
    } else {
      table(ind, [
        {title: 'input', left: true, text: function (r) { return r.input_signature; }, key: function (r) { return r.input_signature; }},
        {title: 'input bytes', text: function (r) { return fmtBytes(r.input_bytes); }, key: function (r) { return r.input_bytes; }},
        {title: 'served by', left: true, text: function (r) { return r.planner || '-'; }, key: function (r) { return r.planner || ''; }},
        {title: 'policies by planner', left: true, text: function (r) { return Object.keys(r.policies_by_planner).map(function (k) { return k + ' ' + r.policies_by_planner[k]; }).join(', ') || '-'; }, key: function (r) { return r.policies; }},
        num('plan_failures'),
        {title: 'no planner fits', left: true, text: function (r) { return r.no_fit || ''; }, key: function (r) { return r.no_fit || ''; }}
      ], data.inputs, function (r) { return r.no_fit ? 'bad' : ''; });
    }
    const pd = document.getElementById('policies');
    if (!data.policies.length) { el('p', {}, pd, 'No policy was generated.'); return; }
    table(pd, [
      num('id'),
      {title: 'generated after iteration', text: function (r) { return r.generated_after_iteration === null ? '-' : String(r.generated_after_iteration); }, key: function (r) { return r.generated_after_iteration; }},
      {title: 'planner', left: true, text: function (r) { return r.planner || '-'; }, key: function (r) { return r.planner || ''; }},
      {title: 'input', left: true, text: function (r) { return r.input_signature || '-'; }, key: function (r) { return r.input_signature || ''; }},
      num('planned_on_iterations'), num('used_in_iterations')
    ], data.policies);
  }

  start(function () {
    summary();
    memory();
    tables();
  });
)JS";

}  // namespace swapplan::internal_report
