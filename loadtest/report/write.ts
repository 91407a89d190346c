// Writes a run's report, reports/<run-id>/index.html: the dashboards' panels and the alerts
// from Prometheus (collectReport reads them all in one pass), beside what the run itself
// knows (parameters, k6 summary, plan vs measured). A Prometheus that cannot be reached, or a range with no data, gives a page
// that says so instead of empty charts. Such a page never replaces a good one: it is written
// beside it (FAILED_REPORT_FILE), and index.html is swapped in only when the page has no problem.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { replaceFile } from '../../shared/replace-files.ts';
import { redactUrl, redactUrlsIn, redactUrlsInValue } from '../../instrumentation/redact-url.ts';
import { dashboards, panelsOf } from '../../dashboards/index.ts';
import { answerQueries } from '../measure/prometheus-client.ts';
import { reportQueries } from '../measure/run-queries.ts';
import { type AlertSpan, type Chart, type ChartExtras, reportFiguresOf } from './collect.ts';
import { type Marker, markersOf } from './markers.ts';
import { type ReportData, renderReport } from './page.ts';

/** The report's file name inside the run folder. */
export const REPORT_FILE = 'index.html';
/** Where a page with a problem goes when a page is already there (which is kept). */
export const FAILED_REPORT_FILE = 'index.failed.html';

export interface ReportInput extends ChartExtras {
  prometheusUrl: string;
  /** The range to chart, epoch ms. */
  from: number;
  to: number;
  /** The run folder the page goes into. */
  reportDir: string;
  runId: string;
  title?: string;
  /** $__rate_interval of the panels' rate() windows (about 4 scrape intervals). */
  rateInterval: string;
  /** The window shaded on every chart (default: plan vs measured's steady window). */
  window?: ReportData['window'];
  parameters?: Record<string, unknown>;
  totals?: ReportData['totals'];
  k6?: ReportData['k6'];
  planVsMeasured?: ReportData['planVsMeasured'];
}

/** Where the report's figures come from: the Prometheus, the range, the panels' rate interval, the probe's samples. */
export type ReportSource = Pick<ReportInput, 'prometheusUrl' | 'from' | 'to' | 'rateInterval' | 'probeSamples'>;

/** What Prometheus gave the report, or, when it could not be reached, why (its error's cause). */
export type ReportFigures = { readonly unreachable: string } | { readonly alertRules: number; readonly charts: Chart[]; readonly alerts: AlertSpan[]; readonly markers: Marker[] };

/** Every query the report makes, in one pass; never throws for Prometheus' sake (an unreachable one is part of the figures). */
export async function collectReport(source: ReportSource): Promise<ReportFigures> {
  const answers = await answerQueries(source.prometheusUrl, reportQueries(source.from, source.to, source.rateInterval));
  const markers = typeof answers.alertRules === 'number' ? markersOf({ ...answers.markers, from: source.from, stepMs: answers.markers.step * 1000 }) : [];
  return reportFiguresOf(answers, markers, source);
}

/** The page's data: what the run knows beside what Prometheus gave (pure; a problem is part of the data). */
export function reportData(input: ReportInput, figures: ReportFigures): ReportData {
  const compared = input.planVsMeasured && 'rows' in input.planVsMeasured ? input.planVsMeasured : undefined;
  const charts = 'unreachable' in figures ? [] : withPlannedInFlight(figures.charts, input.plannedInFlight ?? compared?.rows.find((r) => r.quantity === 'calls in flight')?.planned);
  const shownUrl = redactUrl(input.prometheusUrl).replace(/\/$/, '');
  const base: ReportData = {
    title: input.title ?? `quotascope run ${input.runId}`,
    runId: input.runId,
    generatedAt: Date.now(),
    range: { from: input.from, to: input.to },
    prometheusUrl: shownUrl,
    charts: [],
    alerts: [],
    window: input.window ?? (input.planVsMeasured && 'window' in input.planVsMeasured ? input.planVsMeasured.window : undefined),
    parameters: redactUrlsInValue(input.parameters ?? {}),
    totals: input.totals,
    k6: input.k6,
    planVsMeasured: input.planVsMeasured,
  };
  if ('unreachable' in figures) {
    const message = `${shownUrl} did not answer (${redactUrlsIn(figures.unreachable)}). Start it, or pass the Prometheus that scraped the run with --prometheus; the charts and alerts need it; the tables below come from the run folder, when one was given.`;
    return { ...base, problem: { kind: 'down', message } };
  }
  const { alerts, alertRules, markers } = figures;
  const points = charts.reduce((n, c) => n + c.series.reduce((m, s) => m + s.points.length, 0), 0);
  const data = { ...base, charts, alerts, alertRules, markers };
  if (points === 0 && alerts.length === 0) {
    const range = `${new Date(input.from).toISOString()} and ${new Date(input.to).toISOString()}`;
    return {
      ...data,
      problem: {
        kind: 'empty',
        message: `${shownUrl} answered, but none of the ${charts.length} panels has a sample between ${range}. Check --from and --to, and that this Prometheus scraped the agent service then.`,
      },
    };
  }
  return data;
}

/** The charts with the planned calls in flight as a reference line on the calls-in-flight panels (pure; unchanged without a plan). */
export function withPlannedInFlight(charts: readonly Chart[], plannedInFlight: number | undefined): Chart[] {
  if (plannedInFlight === undefined) return [...charts];
  const inFlight = new Set(dashboards.flatMap((d) => panelsOf(d).filter((panel) => panel.callsInFlight).map((panel) => `${d.uid}/${panel.key}`)));
  return charts.map((chart) => (inFlight.has(chart.id) ? { ...chart, lines: [...chart.lines, { label: 'planned', value: plannedInFlight, color: 'grey' }] } : chart));
}

/** A rendered report page and where it goes: index.html, or beside a page already there when it has a problem. */
export interface ReportPage {
  /** Where the page goes. */
  path: string;
  html: string;
  data: ReportData;
  /** The page left in place (the new one has a problem). */
  kept?: string;
  /** A failed page to remove once this one is written (the new one has no problem). */
  stale?: string;
}

/**
 * The page of `input` and `figures` for `reportDir`, rendered, not written. A page with a
 * problem (Prometheus down, no data) does not replace an index.html already there: it goes
 * to index.failed.html, and `kept` is the page left in place.
 */
export function reportPage(reportDir: string, input: ReportInput, figures: ReportFigures): ReportPage {
  const data = reportData(input, figures);
  const page = join(reportDir, REPORT_FILE);
  const failed = join(reportDir, FAILED_REPORT_FILE);
  const html = renderReport(data);
  if (data.problem && existsSync(page)) return { path: failed, html, data, kept: page };
  return { path: page, html, data, ...(data.problem ? {} : { stale: failed }) };
}

/**
 * Writes <reportDir>/index.html and returns its path and what it found (index.failed.html
 * beside a page already there when the new one has a problem; `kept` is the page left in place).
 */
export async function writeReport(input: ReportInput): Promise<{ path: string; data: ReportData; kept?: string }> {
  const { path, html, data, kept, stale } = reportPage(input.reportDir, input, await collectReport(input));
  replaceFile(path, html);
  if (stale) rmSync(stale, { force: true });
  return { path, data, ...(kept ? { kept } : {}) };
}
