// What the run report shows, read from Prometheus: every panel of the generated dashboards
// (the same specs: expressions, titles, units, legends, thresholds) over the run's range,
// and the alerts that were pending or firing in it, from the ALERTS series.
import { durationSeconds } from '../../dashboards/config.ts';
import { dashboards, instantiate, type PanelKind, panelsOf, type ThresholdSpec } from '../../dashboards/index.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import type { ProbeSample } from '../measure/gauge-probe.ts';
import { queryRange } from '../measure/prometheus-client.ts';

export interface ChartSeries {
  label: string;
  /** [epoch ms, value]. */
  points: [number, number][];
  /** A threshold read from a metric (e.g. each limiter's maxWait): drawn dashed in this color. */
  reference?: ThresholdSpec['color'];
  /** A unit other than the chart's: drawn on a right-hand axis. */
  unit?: string;
}

/** A reference line drawn across a chart: a panel threshold, or a planned value. */
export interface ChartLine {
  label: string;
  value: number;
  color: 'orange' | 'red' | 'grey';
}

export interface Chart {
  dashboard: string;
  /** `<dashboard uid>/<panel key>`. */
  id: string;
  title: string;
  description: string;
  unit: string;
  kind: PanelKind;
  min?: number;
  max?: number;
  series: ChartSeries[];
  lines: ChartLine[];
  /** Why the panel may have no data in a quiet run. */
  quietRunEmpty?: string;
  /** A query Prometheus refused. */
  error?: string;
}

/** One stretch of time an alert (one label set) was pending or firing. */
export interface AlertSpan {
  name: string;
  state: 'pending' | 'firing';
  severity?: string;
  /** The alert's other labels, as `k=v` text. */
  labels: string;
  start: number;
  end: number;
}

/** What the run adds to the panels. */
export interface ChartExtras {
  /** Planned calls in flight, a reference line on the calls-in-flight panel. */
  plannedInFlight?: number;
  /** Random-time samples of the permits in use (GaugeProbe), a trailing mean on the calls-in-flight panel. */
  probeSamples?: readonly ProbeSample[];
}

/** A Grafana legend format (`{{instance}} in use`) filled from a series' labels. */
export function legendOf(format: string, labels: Record<string, string>): string {
  return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_m, name: string) => labels[name] ?? '');
}

/** At each step in [start, end], the mean of the samples in the trailing window (none: no point). */
export function trailingMean(samples: readonly ProbeSample[], start: number, end: number, stepMs: number, windowMs: number): [number, number][] {
  const points: [number, number][] = [];
  for (let t = start; t <= end; t += stepMs) {
    const inWindow = samples.filter((s) => s.at > t - windowMs && s.at <= t);
    if (inWindow.length) points.push([t, inWindow.reduce((sum, s) => sum + s.value, 0) / inWindow.length]);
  }
  return points;
}

/** The query step for a range: about 300 points per series, at least 1 s. */
export function stepSecondsFor(start: number, end: number): number {
  return Math.max(1, Math.round((end - start) / 1000 / 300));
}

/** $__rate_interval as Grafana derives it: four times the larger of the query step and the scrape interval. */
export function rateIntervalFor(start: number, end: number, scrapeIntervalSeconds: number): string {
  return `${4 * Math.max(stepSecondsFor(start, end), scrapeIntervalSeconds)}s`;
}

const thresholdLine = (t: ThresholdSpec): ChartLine => ({ label: t.color === 'red' ? 'alert line' : 'warning line', value: t.value, color: t.color });

/** Heatmap buckets in bound order (`+Inf` last), as Grafana's heatmap format sorts them. */
function byBound(a: ChartSeries, b: ChartSeries): number {
  const bound = (s: ChartSeries) => (s.label === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.label));
  return bound(a) - bound(b);
}

/** Every panel of every generated dashboard, drawn from Prometheus over [start, end]. */
export async function collectCharts(prometheusUrl: string, start: number, end: number, rateInterval: string, probeSamples?: ChartExtras['probeSamples']): Promise<Chart[]> {
  const step = stepSecondsFor(start, end);
  const charts: Chart[] = [];
  for (const dashboard of dashboards) {
    for (const panel of panelsOf(dashboard)) {
      const chart: Chart = {
        dashboard: dashboard.title,
        id: `${dashboard.uid}/${panel.key}`,
        title: panel.title,
        description: panel.description,
        unit: panel.unit,
        kind: panel.kind,
        min: panel.min,
        max: panel.max,
        series: [],
        lines: (panel.thresholds ?? []).map(thresholdLine),
        quietRunEmpty: panel.quietRunEmpty,
      };
      for (const target of panel.targets) {
        try {
          const result = await queryRange(prometheusUrl, instantiate(target.expr, { rateInterval }), start, end, step);
          // A gauge's scraped values can alias with periodic arrivals: say that it is scraped.
          const scraped = panel.callsInFlight && target.expr.includes(limiterMetrics.permitsInUse.name) ? ', scraped' : '';
          for (const r of result) {
            chart.series.push({ label: `${legendOf(target.legend, r.metric).trim() || panel.title}${scraped}`, points: r.points, reference: target.reference, unit: target.unit });
          }
        } catch (error) {
          chart.error = (error as Error).message;
        }
      }
      if (panel.kind === 'heatmap') chart.series.sort(byBound);
      if (panel.callsInFlight && probeSamples?.length) {
        const windowMs = (durationSeconds(rateInterval) ?? 0) * 1000;
        chart.series.push({ label: 'permits in use, sampled at random times', points: trailingMean(probeSamples, start, end, step * 1000, windowMs) });
      }
      charts.push(chart);
    }
  }
  return charts;
}

/** Pending and firing stretches of every alert in [start, end], from the ALERTS series. */
export async function collectAlerts(prometheusUrl: string, start: number, end: number): Promise<AlertSpan[]> {
  const step = stepSecondsFor(start, end);
  const spans: AlertSpan[] = [];
  for (const s of await queryRange(prometheusUrl, 'ALERTS', start, end, step)) {
    const { __name__: _name, alertname, alertstate, severity, ...rest } = s.metric;
    const labels = Object.entries(rest)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ');
    // A gap longer than a step ends a stretch (the alert resolved and came back).
    let current: AlertSpan | undefined;
    for (const [t] of s.points) {
      if (current && t - current.end <= step * 1000 * 1.5) current.end = t;
      else {
        current = { name: alertname ?? '?', state: alertstate === 'firing' ? 'firing' : 'pending', severity, labels, start: t, end: t };
        spans.push(current);
      }
    }
  }
  return spans.sort((a, b) => a.start - b.start || a.name.localeCompare(b.name));
}
