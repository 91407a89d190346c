// The run report as one self-contained HTML page: uPlot's script and styles, the browser
// side (page-script.js) and the report data are inlined, so the file opens anywhere with no
// network. The server side renders the tables and the alerts timeline; page-script.js draws the
// charts from the same data.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { LEGEND_CALCS } from '../../dashboards/index.ts';
import type { K6Summary } from '../k6/summary.ts';
import { formatHttpFailed, formatRequestCounts, formatStatusCounts } from '../k6/summary-text.ts';
import type { PlanVsMeasured } from '../measure/plan-vs-measured.ts';
import { alertRows } from './alert-rows.ts';
import type { AlertSpan, Chart } from './collect.ts';
import { type Marker, quotaChangesSince } from './markers.ts';
import type { QuotaChangeIn } from './quota-cuts.ts';
import { formatTimeouts, type StackTotals } from './summary.ts';
import { runVerdict } from './verdict.ts';

export interface ReportData {
  title: string;
  runId: string;
  generatedAt: number;
  /** The range the charts show, epoch ms. */
  range: { from: number; to: number };
  prometheusUrl: string;
  /** Why Prometheus gave nothing: unreachable (`down`) or no series in the range (`empty`). */
  problem?: { kind: 'down' | 'empty'; message: string };
  charts: Chart[];
  alerts: AlertSpan[];
  /** The incident: first 429, first shed, the mock's quota changes (older pages have none). */
  markers?: Marker[];
  /** Alert rules Prometheus had loaded (undefined when it could not say). */
  alertRules?: number;
  /** The plan-vs-measured window, shaded on every chart. */
  window?: { start: number; end: number };
  parameters: Record<string, unknown>;
  totals?: StackTotals;
  k6?: K6Summary;
  planVsMeasured?: PlanVsMeasured | { skipped: string };
}

const require = createRequire(import.meta.url);
const asset = (path: string): string => readFileSync(require.resolve(path), 'utf8');
/** The page's browser side (plain JS, inlined as it is). */
const PAGE_SCRIPT = new URL('./page-script.js', import.meta.url);

export const esc = (s: unknown): string => String(s).replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Text safe inside a <script> or <style> element. */
const inline = (s: string): string => s.replace(/<\/(script|style)/gi, '<\\/$1');
const iso = (t: number): string => new Date(t).toISOString().replace('.000Z', 'Z');
const num = (v: number | undefined, digits = 2): string => (v === undefined || !Number.isFinite(v) ? '-' : Number.isInteger(v) ? String(v) : v.toFixed(digits));
const ms = (v: number | undefined): string => (v === undefined ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`);
const seconds = (v: number | undefined): string => (v === undefined ? '-' : ms(v * 1000));
const percent = (v: number | undefined): string => (v === undefined ? '-' : `${(v * 100).toFixed(1)}%`);

export function table(head: string[], rows: string[][], className = ''): string {
  const th = head.map((h) => `<th>${esc(h)}</th>`).join('');
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('\n');
  return `<table class="${className}"><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`;
}

export function parametersSection(parameters: Record<string, unknown>): string {
  const rows = Object.entries(parameters)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [esc(k), esc(typeof v === 'object' ? JSON.stringify(v) : v)]);
  return `<section id="parameters"><h2>Run parameters</h2>${rows.length ? table(['parameter', 'value'], rows, 'kv') : '<p class="note">none recorded</p>'}</section>`;
}

function summarySection(d: ReportData): string {
  const parts: string[] = [];
  const t = d.totals;
  if (t) {
    const a = t.acquireSeconds;
    parts.push(
      table(
        ['stack (Prometheus)', 'value'],
        [
          ['user requests', num(t.requests)],
          ['model calls at the provider', num(t.modelCalls)],
          ['429s answered by the provider / seen by the limiter', `${num(t.providerRateLimited)} / ${num(t.limiterRateLimited)}`],
          ['acquire time of admitted calls p50 / p95 / p99', `${seconds(a.p50)} / ${seconds(a.p95)} / ${seconds(a.p99)}`],
          ['limiter timeouts, by reason', `${esc(formatTimeouts(t.timeouts, t.timeoutsByReason))}${t.maxWaitSeconds === undefined ? '' : ` (maxWait ${seconds(t.maxWaitSeconds)})`}`],
          ['alerts fired', esc(t.alertsFired.length ? t.alertsFired.join(', ') : 'none')],
          // Older run records have neither.
          ['alerts pending or firing at the end', esc(t.alertsActiveAtEnd?.length ? t.alertsActiveAtEnd.join(', ') : 'none')],
          ...(t.limiterRequests && Object.keys(t.limiterRequests).length > 0
            ? [['requests by the limiters (admitted / shed / completed / partial)', ['admitted', 'shed', 'completed', 'partial'].map((o) => num(t.limiterRequests[o] ?? 0)).join(' / ')]]
            : []),
          ...(t.actualTokens ? [['wasted tokens (requests not wholly ok)', `${num(t.wastedTokens)} (${percent(t.wastedTokens / t.actualTokens)} of the counted tokens)`]] : []),
        ].map(([k, v]) => [esc(k), v]),
        'kv',
      ),
    );
  }
  const k = d.k6;
  if (k) {
    const rows = [
      // Older run records have no outcomes.
      ['requests: served, partial, shed, failed, unfinished', k.outcomes ? formatRequestCounts(k.outcomes) : '-'],
      ['requests answered', `${num(k.requests)} (${formatHttpFailed(k.failedRate, k.outcomes)})`],
      // Older run records have no per-request statuses.
      ['HTTP statuses of the requests', k.statusCodes ? formatStatusCounts(k.statusCodes) : '-'],
      ...(k.servedDurationMs ? [['served requests: duration p50 / p95 / p99 / max', `${ms(k.servedDurationMs.p50)} / ${ms(k.servedDurationMs.p95)} / ${ms(k.servedDurationMs.p99)} / ${ms(k.servedDurationMs.max)}`]] : []),
      ['every answer (shed 429s included): duration p50 / p95 / p99 / max', `${ms(k.durationMs.p50)} / ${ms(k.durationMs.p95)} / ${ms(k.durationMs.p99)} / ${ms(k.durationMs.max)}`],
      ['permit wait p50 / p95 / max', `${ms(k.permitWaitMs.p50)} / ${ms(k.permitWaitMs.p95)} / ${ms(k.permitWaitMs.max)}`],
      ['requests with a missing branch', percent(k.missingBranchesRate)],
      ['branch outcomes', num(k.branchOutcomes)],
      ['dropped arrivals (no free VU)', num(k.droppedArrivals)],
      ['test duration', ms(k.testRunDurationMs)],
      ...k.thresholds.map((th) => [`threshold ${th.metric}: ${th.expression}`, th.ok ? 'ok' : '<strong class="bad">FAIL</strong>']),
    ];
    parts.push(table(['k6 summary', 'value'], rows.map(([a, b]) => [esc(a), b.startsWith('<strong') ? b : esc(b)]), 'kv'));
  }
  return `<section id="summary"><h2>Summary</h2>${parts.length ? parts.join('\n') : '<p class="note">No k6 summary or totals: the report was made from Prometheus alone.</p>'}</section>`;
}

function planSection(c: ReportData['planVsMeasured']): string {
  let body: string;
  if (!c) body = '<p class="note">Not compared in this run.</p>';
  else if ('skipped' in c) body = `<p class="note">Skipped: ${esc(c.skipped)}</p>`;
  else {
    const window = Math.round((c.window.end - c.window.start) / 1000);
    const rows = c.rows.map((r) => [
      esc(r.quantity),
      num(r.planned, 1),
      num(r.measured, 1),
      Number.isFinite(r.relativeError) ? `${r.relativeError >= 0 ? '+' : ''}${(r.relativeError * 100).toFixed(1)}%` : 'n/a',
    ]);
    body = `<p>Binding quota: ${esc(c.binding)}; steady window ${window} s (shaded on the charts); call time planned ${seconds(c.plannedCallSeconds)}, measured ${seconds(c.measuredCallSeconds)}.</p>${table(['quantity', 'planned', 'measured', 'error'], rows, 'plan')}`;
  }
  return `<section id="plan-vs-measured"><h2>Plan vs measured</h2>${body}</section>`;
}

function alertsSection(d: ReportData): string {
  const span = Math.max(1, d.range.to - d.range.from);
  const pct = (t: number) => (((Math.min(Math.max(t, d.range.from), d.range.to) - d.range.from) / span) * 100).toFixed(2);
  const rel = (t: number) => `${Math.round((t - d.range.from) / 1000)} s`;
  const markers = d.markers ?? [];
  const markerLines = markers.map((m) => `<span class="marker ${m.kind}" style="left:${pct(m.at)}%" title="${esc(`${m.label} at ${rel(m.at)}`)}"></span>`).join('');
  const markerLegend = markers.length
    ? `<p class="markers">${markers.map((m) => `<span class="marker-key ${m.kind}"></span>${esc(m.label)} at ${rel(m.at)}`).join(' · ')}</p>`
    : '';
  let body: string;
  if (d.problem?.kind === 'down') body = '<p class="note">Unknown: Prometheus could not be reached.</p>';
  else if (d.alerts.length === 0) {
    const rules = d.alertRules === undefined ? '' : ` (${d.alertRules} alert rule${d.alertRules === 1 ? '' : 's'} loaded)`;
    body = `<p class="note">No alert was pending or firing in this range${esc(rules)}.</p>`;
  } else {
    const groups = new Map<string, AlertSpan[]>();
    for (const a of d.alerts) {
      const key = `${a.name}\u0000${a.labels}`;
      groups.set(key, [...(groups.get(key) ?? []), a]);
    }
    const lanes = [...groups.values()].map((spans) => {
      const bars = spans
        .map((s) => {
          const width = Math.max(0.5, Number(pct(s.end)) - Number(pct(s.start)));
          return `<span class="bar ${s.state}" style="left:${pct(s.start)}%;width:${width.toFixed(2)}%" title="${esc(`${s.name} ${s.state} ${rel(s.start)}–${rel(s.end)}`)}"></span>`;
        })
        .join('');
      const [first] = spans;
      return `<div class="lane"><div class="lane-name">${esc(first.name)}<small>${esc(first.labels)}</small></div><div class="track">${bars}${markerLines}</div></div>`;
    });
    const when = (t: number | undefined) => (t === undefined ? '-' : rel(t));
    const times = (n: number) => (n > 1 ? ` (${n} stretches)` : '');
    const rows = alertRows(d.alerts).map((r) => [
      esc(r.name),
      esc(r.severity ?? ''),
      `${when(r.firstPending)}${times(r.pendingStretches)}`,
      r.firstFiring === undefined ? 'never' : `<span class="state firing">${when(r.firstFiring)}</span>${times(r.firingStretches)}`,
      `${Math.round(r.firingMs / 1000)} s`,
      rel(r.lastSeen),
      esc(r.labels),
    ]);
    body = `${markerLegend}<div class="timeline">${lanes.join('\n')}<div class="axis"><span>0 s</span><span>${rel(d.range.to)}</span></div></div>
${table(['alert', 'severity', 'first pending', 'first firing', 'time firing', 'last seen', 'labels'], rows, 'alerts')}`;
  }
  if (d.alerts.length === 0 && markerLegend) body = `${markerLegend}${body}`;
  return `<section id="alerts"><h2>Alerts</h2><p class="note">From Prometheus' <code>ALERTS</code> series: amber while pending, red while firing; one row per alert and label set, however often it flickered. Vertical lines here and on every chart: the first provider 429, the first request shed and each change of the mock provider's quota.</p>${body}</section>`;
}

function chartsSection(charts: Chart[]): string {
  const byDashboard = new Map<string, Chart[]>();
  for (const c of charts) byDashboard.set(c.dashboard, [...(byDashboard.get(c.dashboard) ?? []), c]);
  const groups = [...byDashboard.entries()].map(
    ([dashboard, list]) =>
      `<h2>${esc(dashboard)}</h2><div class="grid">${list
        .map(
          (c) =>
            `<section class="chart${c.kind === 'heatmap' ? ' heatmap' : ''}" data-chart-id="${esc(c.id)}"><h3 title="${esc(c.description)}">${esc(c.title)}</h3><div class="plot"></div><p class="description">${esc(c.description)}</p></section>`,
        )
        .join('\n')}</div>`,
  );
  return `<section id="charts">${groups.join('\n')}</section>`;
}

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1280px; padding: 16px 24px; color: #1f2328; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 0 0 6px; }
.meta { color: #57606a; font-size: 13px; }
.verdict { padding: 10px 14px; border-radius: 6px; margin: 12px 0; font-size: 15px; font-weight: 600; }
.verdict.fits { background: #dafbe1; border: 1px solid #4ac26b; } .verdict.misfit { background: #ffebe9; border: 1px solid #ff8182; } .verdict.unknown { background: #fff8c5; border: 1px solid #d4a72c; }
.banner { padding: 14px 16px; border-radius: 6px; margin: 16px 0; font-size: 15px; }
.banner.down { background: #ffebe9; border: 1px solid #ff8182; } .banner.empty { background: #fff8c5; border: 1px solid #d4a72c; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
table.plan td:not(:first-child) { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: #cf222e; }
.note { color: #57606a; font-size: 13px; }
.cards { display: flex; flex-wrap: wrap; gap: 0 32px; align-items: flex-start; }
.grid { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 16px; }
section.chart { border: 1px solid #d0d7de; border-radius: 6px; padding: 10px; min-width: 0; }
.plot { min-height: 220px; }
.plot.empty { display: flex; align-items: center; justify-content: center; color: #57606a; font-size: 13px; text-align: center; background: #f6f8fa; }
.description { color: #57606a; font-size: 12px; margin: 6px 0 0; }
table.legend { font-size: 12px; margin: 6px 0 0; width: 100%; } table.legend td:not(:first-child), table.legend th { text-align: right; }
table.legend th:first-child { text-align: left; }
.swatch { display: inline-block; width: 14px; height: 3px; margin-right: 6px; vertical-align: middle; }
.swatch.dashed { height: 0; border-top: 2px dashed; }
.timeline { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px; }
.lane { display: flex; align-items: center; margin: 4px 0; }
.lane-name { width: 300px; font-size: 13px; font-weight: 600; } .lane-name small { display: block; font-weight: 400; color: #57606a; }
.track { position: relative; flex: 1; height: 18px; background: #f6f8fa; border-radius: 3px; }
.bar { position: absolute; top: 2px; bottom: 2px; border-radius: 2px; }
.bar.pending, .state.pending { background: #FF9830; } .bar.firing, .state.firing { background: #F2495C; }
.state { color: #fff; padding: 0 6px; border-radius: 3px; }
.marker { position: absolute; top: -3px; bottom: -3px; width: 2px; margin-left: -1px; }
.marker.first-429, .marker-key.first-429 { background: #C4162A; } .marker.first-shed, .marker-key.first-shed { background: #8F3BB8; } .marker.quota-change, .marker-key.quota-change { background: #1F60C4; }
.markers { font-size: 13px; } .marker-key { display: inline-block; width: 3px; height: 12px; margin: 0 5px 0 2px; vertical-align: middle; }
.axis { display: flex; justify-content: space-between; margin-left: 300px; font-size: 12px; color: #57606a; }
`;

/** The mock provider's quota changes, seconds from the range's start, as the verdict takes them. */
function quotaChangesOf(d: ReportData): QuotaChangeIn[] | undefined {
  return d.totals?.quotaChanges && quotaChangesSince(d.totals.quotaChanges, d.range.from);
}

/** The run's verdict, the page's first line (k6's counts, the provider's 429s, the plan). */
function verdictBanner(d: ReportData): string {
  if (!d.k6?.outcomes) return '';
  const v = runVerdict({
    outcomes: d.k6.outcomes,
    providerRateLimited: d.totals?.providerRateLimited,
    planVsMeasured: d.planVsMeasured,
    quotaChanges: quotaChangesOf(d),
    causes: { timeoutsByReason: d.totals?.timeoutsByReason, branchOutcomes: d.k6.branchOutcomesByKind, statusCodes: d.k6.statusCodes },
  });
  const kind = v.fits === undefined ? 'unknown' : v.fits ? 'fits' : 'misfit';
  return `<p id="verdict" class="verdict ${kind}">${esc(v.line)}</p>`;
}

/** The report page for `data`: one HTML string with everything inlined. */
export function renderReport(data: ReportData): string {
  const problem = data.problem
    ? `<div class="banner ${data.problem.kind}" role="alert"><strong>${data.problem.kind === 'down' ? 'Prometheus is not reachable.' : 'No data in this range.'}</strong> ${esc(data.problem.message)}</div>`
    : '';
  const json = JSON.stringify({ ...data, legendCalcs: LEGEND_CALCS }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>${esc(data.title)}</title>
<style>${inline(asset('uplot/dist/uPlot.min.css'))}</style>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${esc(data.title)}</h1>
<p class="meta">${esc(iso(data.range.from))} to ${esc(iso(data.range.to))} (${Math.round((data.range.to - data.range.from) / 1000)} s) · Prometheus ${esc(data.prometheusUrl)} · made ${esc(iso(data.generatedAt))}</p>
</header>
${verdictBanner(data)}
${problem}
<div class="cards">
${parametersSection(data.parameters)}
${summarySection(data)}
${planSection(data.planVsMeasured)}
</div>
${alertsSection(data)}
${data.problem ? '' : chartsSection(data.charts)}
<script type="application/json" id="report-data">${json}</script>
<script>${inline(asset('uplot/dist/uPlot.iife.min.js'))}</script>
<script>${inline(readFileSync(PAGE_SCRIPT, 'utf8'))}</script>
</body>
</html>
`;
}
