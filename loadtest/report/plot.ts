// run.svg: the dashboards' own panel specs (same expressions, titles, units, thresholds)
// drawn from the run's Prometheus data, with the plan-vs-measured window shaded.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { instantiate, limiterDashboard, loadtestDashboard, panelsOf } from '../../dashboards/index.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import type { ProbeSample } from '../measure/gauge-probe.ts';
import { queryRange } from '../measure/prometheus-client.ts';
import { type Panel, type PlotLine, type PlotSeries, renderSvg } from './svg.ts';

/** One panel of the report, and what the run adds to it. */
export interface PlotPanel {
  dashboard: Parameters<typeof panelsOf>[0];
  key: string;
  /** The panel shows calls in flight: draw the probe's samples and the planned value on it. */
  callsInFlight?: true;
  /** Series of this gauge are scraped (periodic, may alias): their legend says so. */
  scrapedGauge?: string;
}

/** The report's panels: the dashboards' own specs (same expressions, titles, units, thresholds). */
export const PLOT_PANELS: readonly PlotPanel[] = [
  { dashboard: loadtestDashboard, key: 'agent-requests' },
  { dashboard: limiterDashboard, key: 'acquire-quantiles' },
  { dashboard: limiterDashboard, key: 'littles-law', callsInFlight: true, scrapedGauge: limiterMetrics.permitsInUse.name },
  { dashboard: limiterDashboard, key: 'waiting' },
];

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
  for (const { dashboard, key, callsInFlight, scrapedGauge } of PLOT_PANELS) {
    const spec = panelsOf(dashboard).find((p) => p.key === key);
    if (!spec) throw new Error(`dashboard ${dashboard.uid} has no panel ${key}`);
    const series: PlotSeries[] = [];
    for (const target of spec.targets) {
      const expr = instantiate(target.expr, { rateInterval: extras.rateInterval ?? '10s' });
      const result = await queryRange(prometheusUrl, expr, start, end, step);
      // A gauge's scraped values can alias with periodic arrivals: say that it is scraped.
      const suffix = scrapedGauge && target.expr.includes(scrapedGauge) ? ', scraped' : '';
      for (const r of result) series.push({ label: `${legendOf(target.legend, r.metric).trim() || spec.title}${suffix}`, points: r.points });
      if (result.length === 0) series.push({ label: legendOf(target.legend, {}).trim() || spec.title, points: [] });
    }
    const lines: PlotLine[] = (spec.thresholds ?? []).map((t) => ({ label: t.color === 'red' ? 'alert line' : 'warning line', value: t.value, color: t.color === 'red' ? '#d62728' : '#ff9800' }));
    if (callsInFlight && extras.probeSamples?.length) {
      const windowMs = parseSeconds(extras.rateInterval ?? '10s') * 1000;
      series.push({ label: 'permits in use, sampled at random times', points: trailingMean(extras.probeSamples, start, end, step * 1000, windowMs) });
    }
    if (callsInFlight && extras.plannedInFlight !== undefined) lines.push({ label: 'planned', value: extras.plannedInFlight, color: '#555' });
    panels.push({ title: spec.title, unit: spec.unit, series, lines });
  }
  const band = extras.window && { ...extras.window, label: 'plan vs measured window' };
  const svg = renderSvg({ title, subtitle: extras.subtitle, band }, panels, start, end);
  const path = join(reportDir, 'run.svg');
  writeFileSync(path, svg);
  return path;
}
