// The run report: totals from Prometheus over the run (the processes are fresh, so a
// counter's last value is the run's total), acquire-time percentiles, alerts that fired,
// and run.svg drawn from the dashboards' panel specs.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { instantiate, limiterDashboard, loadtestDashboard, panelsOf } from '../dashboards/index.ts';
import type { ProbeSample } from './gauge-probe.ts';
import { type Panel, type PlotLine, type PlotSeries, renderSvg } from './plot.ts';
import { alerts, alertsFiredBetween, queryRange, queryScalar } from './prometheus.ts';

export interface StackTotals {
  requests: number;
  modelCalls: number;
  providerRateLimited: number;
  limiterRateLimited: number;
  timeouts: number;
  acquireSeconds: { p50?: number; p95?: number; p99?: number };
  alertsFired: string[];
  alertsActiveAtEnd: string[];
}

const total = (name: string, seconds: number) => `sum(last_over_time(${name}[${seconds}s]))`;

export async function stackTotals(prometheusUrl: string, start: number, end: number): Promise<StackTotals> {
  const s = Math.max(1, Math.ceil((end - start) / 1000));
  const q = async (expr: string) => (await queryScalar(prometheusUrl, expr, end)) ?? 0;
  const acquire = `sum by (le) (last_over_time(${limiterMetrics.acquireDuration.name}_bucket[${s}s]))`;
  const quantile = (p: number) => queryScalar(prometheusUrl, `histogram_quantile(${p}, ${acquire})`, end);
  return {
    requests: await q(total('agent_requests_total', s)),
    modelCalls: await q(total('mock_provider_requests_total', s)),
    providerRateLimited: await q(total('mock_provider_rate_limited_total', s)),
    limiterRateLimited: await q(total(limiterMetrics.rateLimited.name, s)),
    timeouts: await q(total(limiterMetrics.timeouts.name, s)),
    acquireSeconds: { p50: await quantile(0.5), p95: await quantile(0.95), p99: await quantile(0.99) },
    alertsFired: await alertsFiredBetween(prometheusUrl, start, end),
    alertsActiveAtEnd: (await alerts(prometheusUrl)).map((a) => `${a.name} (${a.state})`),
  };
}

/** The report's panels: the dashboards' own specs (same expressions, titles, units, thresholds). */
export const PLOT_PANELS = [
  { dashboard: loadtestDashboard, key: 'agent-requests' },
  { dashboard: limiterDashboard, key: 'acquire-quantiles' },
  { dashboard: limiterDashboard, key: 'littles-law' },
  { dashboard: limiterDashboard, key: 'waiting' },
] as const;

/** A Grafana legend format (`{{instance}} in use`) filled from a series' labels. */
export function legendOf(format: string, labels: Record<string, string>): string {
  return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_m, name: string) => labels[name] ?? '');
}

export interface PlotExtras {
  /** The plan-vs-measured window, shaded on every panel. */
  window?: { start: number; end: number };
  /** Planned calls in flight, drawn on the calls-in-flight panel. */
  plannedInFlight?: number;
  subtitle?: string;
  /** Random-time samples of the permits in use (GaugeProbe), drawn as a trailing mean on the calls-in-flight panel. */
  probeSamples?: readonly ProbeSample[];
  /** $__rate_interval for the panels' rate() windows (about 4 scrape intervals). */
  rateInterval?: string;
}

const parseSeconds = (d: string): number => Number.parseFloat(d) * (d.endsWith('m') ? 60 : 1);

/** At each step in [start, end], the mean of the samples in the trailing window (none: no point). */
export function trailingMean(samples: readonly ProbeSample[], start: number, end: number, stepMs: number, windowMs: number): [number, number][] {
  const points: [number, number][] = [];
  for (let t = start; t <= end; t += stepMs) {
    const inWindow = samples.filter((s) => s.at > t - windowMs && s.at <= t);
    if (inWindow.length) points.push([t, inWindow.reduce((sum, s) => sum + s.value, 0) / inWindow.length]);
  }
  return points;
}

/** Writes run.svg (requests, acquire time, calls in flight, waiting calls over the run) into reportDir. */
export async function writePlot(prometheusUrl: string, reportDir: string, start: number, end: number, title: string, extras: PlotExtras = {}): Promise<string> {
  const step = Math.max(1, Math.round((end - start) / 1000 / 300));
  const panels: Panel[] = [];
  for (const { dashboard, key } of PLOT_PANELS) {
    const spec = panelsOf(dashboard).find((p) => p.key === key);
    if (!spec) throw new Error(`dashboard ${dashboard.uid} has no panel ${key}`);
    const series: PlotSeries[] = [];
    for (const target of spec.targets) {
      const expr = instantiate(target.expr, { rateInterval: extras.rateInterval ?? '10s' });
      const result = await queryRange(prometheusUrl, expr, start, end, step);
      // A gauge's scraped values can alias with periodic arrivals: say that it is scraped.
      const suffix = key === 'littles-law' && target.expr.includes(limiterMetrics.permitsInUse.name) ? ', scraped' : '';
      for (const r of result) series.push({ label: `${legendOf(target.legend, r.metric).trim() || spec.title}${suffix}`, points: r.points });
      if (result.length === 0) series.push({ label: legendOf(target.legend, {}).trim() || spec.title, points: [] });
    }
    const lines: PlotLine[] = (spec.thresholds ?? []).map((t) => ({ label: t.color === 'red' ? 'alert line' : 'warning line', value: t.value, color: t.color === 'red' ? '#d62728' : '#ff9800' }));
    if (key === 'littles-law' && extras.probeSamples?.length) {
      const windowMs = parseSeconds(extras.rateInterval ?? '10s') * 1000;
      series.push({ label: 'permits in use, sampled at random times', points: trailingMean(extras.probeSamples, start, end, step * 1000, windowMs) });
    }
    if (key === 'littles-law' && extras.plannedInFlight !== undefined) lines.push({ label: 'planned', value: extras.plannedInFlight, color: '#555' });
    panels.push({ title: spec.title, unit: spec.unit, series, lines });
  }
  const band = extras.window && { ...extras.window, label: 'plan vs measured window' };
  const svg = renderSvg({ title, subtitle: extras.subtitle, band }, panels, start, end);
  const path = join(reportDir, 'run.svg');
  writeFileSync(path, svg);
  return path;
}
