// The sweep's chart as inline SVG (the page loads nothing): served per minute against the
// offered rate (every step a dot, the mean per rate joined), the served requests' p95 on the
// right axis, the plan's capacity as a dashed line, served = offered as a faint diagonal, and
// the knee as a vertical line. Pure: steps and marks in, markup out.

export interface ChartStep {
  readonly perMinute: number;
  readonly servedPerMinute: number;
  readonly servedP95Seconds: number | undefined;
  readonly ok: boolean;
}

export interface ChartMarks {
  readonly planPerMinute?: number;
  readonly kneePerMinute?: number;
  readonly sloP95Seconds: number;
}

const W = 900;
const H = 420;
const M = { left: 64, right: 70, top: 24, bottom: 40 };

/** A "nice" upper bound for an axis holding `max`. */
function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const step = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 2.5, 5, 10].map((m) => m * step).find((v) => v >= max * 1.05) ?? 10 * step;
}

const ticks = (max: number) => [0, 0.25, 0.5, 0.75, 1].map((f) => f * max);
const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));

export function sweepChart(steps: readonly ChartStep[], marks: ChartMarks): string {
  const xMax = niceMax(Math.max(...steps.map((s) => s.perMinute), marks.planPerMinute ?? 0, 1));
  const yMax = niceMax(Math.max(...steps.map((s) => s.servedPerMinute), marks.planPerMinute ?? 0, 1));
  const p95s = steps.map((s) => s.servedP95Seconds).filter((v): v is number => v !== undefined);
  const zMax = niceMax(Math.max(...p95s, marks.sloP95Seconds, 1));
  const x = (v: number) => M.left + (v / xMax) * (W - M.left - M.right);
  const y = (v: number) => H - M.bottom - (v / yMax) * (H - M.top - M.bottom);
  const z = (v: number) => H - M.bottom - (v / zMax) * (H - M.top - M.bottom);
  const parts: string[] = [];
  for (const t of ticks(yMax)) parts.push(`<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${y(t)}" y2="${y(t)}"/><text class="tick" x="${M.left - 8}" y="${y(t) + 4}" text-anchor="end">${fmt(t)}</text>`);
  for (const t of ticks(zMax)) parts.push(`<text class="tick p95" x="${W - M.right + 8}" y="${z(t) + 4}">${fmt(t)} s</text>`);
  for (const t of ticks(xMax)) parts.push(`<text class="tick" x="${x(t)}" y="${H - M.bottom + 18}" text-anchor="middle">${fmt(t)}</text>`);
  parts.push(`<line class="axis" x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}"/>`);
  parts.push(`<text class="label" x="${(W + M.left - M.right) / 2}" y="${H - 6}" text-anchor="middle">offered user requests/min</text>`);
  parts.push(`<text class="label" transform="translate(16 ${(H - M.bottom + M.top) / 2}) rotate(-90)" text-anchor="middle">served requests/min</text>`);
  parts.push(`<text class="label p95" transform="translate(${W - 10} ${(H - M.bottom + M.top) / 2}) rotate(90)" text-anchor="middle">p95 of served requests, s</text>`);
  // served = offered: what a tree with room to spare serves
  const diagonalEnd = Math.min(xMax, yMax);
  parts.push(`<line class="diagonal" x1="${x(0)}" y1="${y(0)}" x2="${x(diagonalEnd)}" y2="${y(diagonalEnd)}"/>`);
  if (marks.planPerMinute !== undefined) {
    parts.push(`<line class="plan" x1="${M.left}" x2="${W - M.right}" y1="${y(marks.planPerMinute)}" y2="${y(marks.planPerMinute)}"/>`);
    parts.push(`<text class="plan-label" x="${M.left + 6}" y="${y(marks.planPerMinute) - 6}">plan ${marks.planPerMinute.toFixed(1)}/min</text>`);
  }
  if (marks.sloP95Seconds <= zMax) parts.push(`<line class="slo" x1="${M.left}" x2="${W - M.right}" y1="${z(marks.sloP95Seconds)}" y2="${z(marks.sloP95Seconds)}"/>`);
  if (marks.kneePerMinute !== undefined) {
    parts.push(`<line class="knee" x1="${x(marks.kneePerMinute)}" x2="${x(marks.kneePerMinute)}" y1="${M.top}" y2="${H - M.bottom}"/>`);
    parts.push(`<text class="knee-label" x="${x(marks.kneePerMinute) + 6}" y="${M.top + 12}">knee ${marks.kneePerMinute.toFixed(1)}/min</text>`);
  }
  // The mean per offered rate, joined in rate order.
  const rates = [...new Set(steps.map((s) => s.perMinute))].sort((a, b) => a - b);
  const mean = (vs: number[]) => vs.reduce((a, b) => a + b, 0) / vs.length;
  const served = rates.map((r) => [r, mean(steps.filter((s) => s.perMinute === r).map((s) => s.servedPerMinute))] as const);
  parts.push(`<polyline class="served" points="${served.map(([r, v]) => `${x(r)},${y(v)}`).join(' ')}"/>`);
  const withP95 = rates
    .map((r) => [r, steps.filter((s) => s.perMinute === r && s.servedP95Seconds !== undefined).map((s) => s.servedP95Seconds as number)] as const)
    .filter(([, vs]) => vs.length > 0)
    .map(([r, vs]) => [r, mean(vs)] as const);
  parts.push(`<polyline class="p95-line" points="${withP95.map(([r, v]) => `${x(r)},${z(v)}`).join(' ')}"/>`);
  for (const s of steps) {
    parts.push(`<circle class="step ${s.ok ? 'pass' : 'fail'}" cx="${x(s.perMinute)}" cy="${y(s.servedPerMinute)}" r="5"><title>offered ${s.perMinute}/min, served ${s.servedPerMinute.toFixed(1)}/min, ${s.ok ? 'pass' : 'fail'}</title></circle>`);
    if (s.servedP95Seconds !== undefined) parts.push(`<rect class="p95-dot" x="${x(s.perMinute) - 3.5}" y="${z(s.servedP95Seconds) - 3.5}" width="7" height="7"/>`);
  }
  const legend = [
    ['served', 'served/min (a dot per step: green passed, red failed)'],
    ['p95-line', 'p95 of served requests (right axis)'],
    ['plan', "the plan's capacity"],
    ['knee', 'the measured knee'],
    ['slo', 'the p95 SLO (right axis)'],
  ]
    .map(([cls, text]) => `<span><svg width="22" height="10"><line class="${cls}" x1="0" x2="22" y1="5" y2="5"/></svg> ${text}</span>`)
    .join('');
  return `<svg class="sweep-chart" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="served requests and p95 against the offered rate">${parts.join('')}</svg><div class="sweep-chart sweep-legend">${legend}</div>`;
}

/** The chart's styles. */
export const SWEEP_CHART_STYLE = `
.sweep-chart .grid { stroke: #e3e3e3; } .sweep-chart .axis { stroke: #888; }
.sweep-chart .tick { font: 11px sans-serif; fill: #444; } .sweep-chart .label { font: 12px sans-serif; fill: #222; }
.sweep-chart .diagonal { stroke: #bbb; stroke-dasharray: 2 4; }
.sweep-chart .plan { stroke: #7b3fbf; stroke-width: 2; stroke-dasharray: 8 5; } .sweep-chart .plan-label { font: 12px sans-serif; fill: #7b3fbf; }
.sweep-chart .knee { stroke: #d97706; stroke-width: 2; } .sweep-chart .knee-label { font: 12px sans-serif; fill: #d97706; }
.sweep-chart .slo { stroke: #c2410c; stroke-dasharray: 3 3; }
.sweep-chart .served { fill: none; stroke: #1f6feb; stroke-width: 2; } .sweep-chart .p95-line { fill: none; stroke: #555; stroke-width: 1.5; stroke-dasharray: 5 3; }
.sweep-chart .step.pass { fill: #16a34a; } .sweep-chart .step.fail { fill: #dc2626; } .sweep-chart .p95-dot { fill: #555; }
.sweep-chart .p95 { fill: #555; }
.sweep-legend { display: flex; flex-wrap: wrap; gap: 6px 18px; font: 12px sans-serif; color: #333; margin: 4px 0 0 64px; }`;
