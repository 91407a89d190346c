// What the run report shows, decoded from Prometheus' answers to run-queries.ts's
// reportQueries: every panel of the generated dashboards (the same specs: expressions,
// titles, units, legends, thresholds) over the run's range, and the alerts that were pending
// or firing in it, from the ALERTS series. Pure: nothing here queries.
import { dashboards, type PanelKind, panelsOf, type ThresholdSpec } from '../../dashboards/index.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import type { ProbeSample } from '../measure/gauge-probe.ts';
import type { Answers, Series } from '../measure/prometheus-client.ts';
import type { reportQueries } from '../measure/run-queries.ts';
import type { Marker } from './markers.ts';

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

const thresholdLine = (t: ThresholdSpec): ChartLine => ({ label: t.color === 'red' ? 'alert line' : 'warning line', value: t.value, color: t.color });

/** Heatmap buckets in bound order (`+Inf` last), as Grafana's heatmap format sorts them. */
function byBound(a: ChartSeries, b: ChartSeries): number {
  const bound = (s: ChartSeries) => (s.label === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.label));
  return bound(a) - bound(b);
}

/** The answers to reportQueries (run-queries.ts) the report's charts and alerts are drawn from. */
export type ReportAnswers = Answers<ReturnType<typeof reportQueries>>;

/**
 * Every panel of every generated dashboard, drawn from the answers to its targets' queries
 * over [start, end] (pure; a query Prometheus refused is the chart's error), with the probe's
 * samples as a trailing mean on the calls-in-flight panels.
 */
export function chartsOf(a: ReportAnswers, start: number, end: number, probeSamples?: ChartExtras['probeSamples']): Chart[] {
  const charts: Chart[] = [];
  let index = 0;
  for (const dashboard of dashboards) {
    for (const panel of panelsOf(dashboard)) {
      const answered = a.panels[index++];
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
      if (answered?.id !== chart.id) throw new Error(`report: the answers do not match the panels at ${chart.id}`);
      panel.targets.forEach((target, i) => {
        const result = answered.targets[i];
        if ('error' in result) {
          chart.error = result.error;
          return;
        }
        // A gauge's scraped values can alias with periodic arrivals: say that it is scraped.
        const scraped = panel.callsInFlight && target.expr.includes(limiterMetrics.permitsInUse.name) ? ', scraped' : '';
        for (const r of result) {
          chart.series.push({ label: `${legendOf(target.legend, r.metric).trim() || panel.title}${scraped}`, points: r.points, reference: target.reference, unit: target.unit });
        }
      });
      if (panel.kind === 'heatmap') chart.series.sort(byBound);
      if (panel.callsInFlight && probeSamples?.length) {
        chart.series.push({ label: 'permits in use, sampled at random times', points: trailingMean(probeSamples, start, end, a.step * 1000, a.rateWindowMs) });
      }
      charts.push(chart);
    }
  }
  return charts;
}

/** Pending and firing stretches of every alert, from the ALERTS series at `step` seconds (pure). */
export function alertSpansOf(series: readonly Series[], step: number): AlertSpan[] {
  const spans: AlertSpan[] = [];
  for (const s of series) {
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

/**
 * The report's figures from the answers to reportQueries and the markers found in them
 * (pure): why Prometheus could not be reached (the alerting rules' error's cause), or the
 * rules' count, the charts, the alerts' stretches and the markers.
 */
export function reportFiguresOf(
  a: ReportAnswers,
  markers: readonly Marker[],
  range: { from: number; to: number; probeSamples?: ChartExtras['probeSamples'] },
): { readonly unreachable: string } | { readonly alertRules: number; readonly charts: Chart[]; readonly alerts: AlertSpan[]; readonly markers: Marker[] } {
  if (typeof a.alertRules !== 'number') return { unreachable: a.alertRules.cause ?? a.alertRules.error };
  return { alertRules: a.alertRules, charts: chartsOf(a, range.from, range.to, range.probeSamples), alerts: alertSpansOf(a.alerts, a.step), markers: [...markers] };
}
