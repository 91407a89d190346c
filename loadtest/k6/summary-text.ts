// The few lines k6 prints at the end of a run (handleSummary replaces k6's own summary).
import { BRANCH_OUTCOMES } from '../../instrumentation/errors.ts';
import {
  REQUEST_FAILED_METRIC,
  REQUEST_OUTCOME_METRIC,
  REQUEST_OUTCOMES,
  type RequestCounts,
  type RequestOutcome,
  REQUESTS_STARTED_METRIC,
  SERVED_DURATION_METRIC,
  STATUS_TAGS,
  statusSubmetric,
} from './request-status.ts';

// biome-ignore lint/suspicious/noExplicitAny: k6's summary data is an untyped JSON tree
type Json = any;

function metricValues(data: Json, name: string): Record<string, number> | undefined {
  return data?.metrics?.[name]?.values;
}

// k6 keeps a tag's sub-metric in the summary only when a threshold names it: these always
// hold and are left out of the threshold lines.
const DISPLAY_ONLY = 'count>=0';
const outcomeMetric = (outcome: string) => `qs_branch_outcomes{outcome:${outcome}}`;
const requestOutcomeMetric = (outcome: string) => `${REQUEST_OUTCOME_METRIC}{outcome:${outcome}}`;
export const SUMMARY_SUBMETRICS: Record<string, string[]> = Object.fromEntries(
  [...BRANCH_OUTCOMES.map(outcomeMetric), ...REQUEST_OUTCOMES.map(requestOutcomeMetric), ...STATUS_TAGS.map(statusSubmetric)].map((m) => [m, [DISPLAY_ONLY]]),
);

/**
 * Every started user request by how it ended: served, partial, shed, failed, and unfinished
 * (started, but the run ended first: k6 interrupted the iteration).
 */
export function requestCounts(data: Json): RequestCounts {
  const ended = Object.fromEntries(REQUEST_OUTCOMES.map((o) => [o, Number(metricValues(data, requestOutcomeMetric(o))?.count ?? 0)])) as Record<RequestOutcome, number>;
  const started = Number(metricValues(data, REQUESTS_STARTED_METRIC)?.count ?? 0);
  const endedTotal = REQUEST_OUTCOMES.reduce((n, o) => n + ended[o], 0);
  return { ...ended, unfinished: Math.max(0, started - endedTotal) };
}

/** Branch outcomes by kind (only those seen). */
export function branchOutcomeCounts(data: Json): Record<string, number> {
  const seen = BRANCH_OUTCOMES.map((o) => [o, Number(metricValues(data, outcomeMetric(o))?.count ?? 0)] as const);
  return Object.fromEntries(seen.filter(([, n]) => n > 0));
}

/**
 * k6's http_req_failed beside the user requests that failed: every 429 counts in it, so the
 * instant 429s of shed requests (and, on the ADK protocol, each request's second HTTP call)
 * make it differ from the requests that failed. `HTTP requests failed 63.0 % (k6's
 * http_req_failed: the 429s of 134 shed requests count there; user requests failed 0)`.
 */
export function formatHttpFailed(failedRate: number, outcomes: RequestCounts | undefined): string {
  const pct = `${(failedRate * 100).toFixed(1)} %`;
  if (!outcomes) return `HTTP requests failed ${pct} (k6's http_req_failed)`;
  const shed = outcomes.shed > 0 ? `the 429s of ${outcomes.shed} shed requests count there; ` : '';
  return `HTTP requests failed ${pct} (k6's http_req_failed: ${shed}user requests failed ${outcomes.failed})`;
}

/** `served 12, partial 0, shed 3, failed 1, unfinished 2`. */
export const formatRequestCounts = (c: RequestCounts): string =>
  `served ${c.served}, partial ${c.partial}, shed ${c.shed}, failed ${c.failed}, unfinished ${c.unfinished}`;

/** The HTTP statuses user requests ended with, by `status` tag (only those seen). */
export function statusCounts(data: Json): Record<string, number> {
  const seen = STATUS_TAGS.map((tag) => [tag, Number(metricValues(data, statusSubmetric(tag))?.count ?? 0)] as const);
  return Object.fromEntries(seen.filter(([, n]) => n > 0));
}

/** `200 ×12, 404 ×3`. */
export const formatStatusCounts = (counts: Record<string, number>): string =>
  Object.entries(counts)
    .map(([status, n]) => `${status} ×${n}`)
    .join(', ') || 'none';

/** Thresholds set only so the summary can show a sub-metric. */
export function isDisplayOnly(metric: string, expression: string): boolean {
  return expression === DISPLAY_ONLY && metric in SUMMARY_SUBMETRICS;
}

const fmtMs = (v: number | undefined): string => (v === undefined ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)}s` : `${v.toFixed(0)}ms`);

export function summaryText(data: Json, scenario: string): string {
  const lines = [`quotascope k6 summary: ${scenario}`];
  // One qs_request_duration sample per user request, whatever HTTP calls it took (ADK: two).
  const reqs = metricValues(data, 'qs_request_duration');
  const dur = metricValues(data, 'qs_request_duration');
  const served = metricValues(data, SERVED_DURATION_METRIC);
  const wait = metricValues(data, 'qs_permit_wait');
  const missing = metricValues(data, 'qs_missing_branches');
  // Failed user requests: no 2xx answer, or no branch ok (see request-status.ts).
  const failed = metricValues(data, REQUEST_FAILED_METRIC);
  const counts = requestCounts(data);
  lines.push(`  requests:         ${reqs?.count ?? 0} (failed ${((failed?.rate ?? 0) * 100).toFixed(1)}%)`);
  lines.push(`  k6 HTTP:          ${formatHttpFailed(Number(metricValues(data, 'http_req_failed')?.rate ?? 0), counts)}`);
  lines.push(`  outcomes:         ${formatRequestCounts(counts)}`);
  lines.push(`  statuses:         ${formatStatusCounts(statusCounts(data))}`);
  lines.push(`  served duration:  p50 ${fmtMs(served?.med)}  p95 ${fmtMs(served?.['p(95)'])}  p99 ${fmtMs(served?.['p(99)'])}  max ${fmtMs(served?.max)} (served requests)`);
  lines.push(`  request duration: p50 ${fmtMs(dur?.med)}  p95 ${fmtMs(dur?.['p(95)'])}  p99 ${fmtMs(dur?.['p(99)'])}  max ${fmtMs(dur?.max)} (every answer, the instant 429s of shed requests included)`);
  lines.push(`  permit wait:      p50 ${fmtMs(wait?.med)}  p95 ${fmtMs(wait?.['p(95)'])}  max ${fmtMs(wait?.max)}`);
  lines.push(`  missing branches: ${((missing?.rate ?? 0) * 100).toFixed(1)}% of requests`);
  const outcomes = BRANCH_OUTCOMES.map((o) => `${o} ${metricValues(data, outcomeMetric(o))?.count ?? 0}`);
  lines.push(`  branch outcomes:  ${outcomes.join(', ')}`);
  const calls = metricValues(data, 'qs_model_calls');
  if (calls) {
    const tokens = metricValues(data, 'qs_model_tokens');
    const perRequest = reqs?.count ? (calls.count / reqs.count).toFixed(1) : '-';
    lines.push(`  model calls:      ${calls.count} (${perRequest} per request), ${tokens?.count ?? 0} tokens`);
  }
  const dropped = metricValues(data, 'dropped_iterations');
  if (dropped?.count) lines.push(`  dropped arrivals: ${dropped.count} (no free VU)`);
  for (const [metric, m] of Object.entries<Json>(data?.metrics ?? {})) {
    for (const [expr, t] of Object.entries<Json>(m?.thresholds ?? {})) {
      if (isDisplayOnly(metric, expr)) continue;
      lines.push(`  threshold ${t?.ok ? 'ok  ' : 'FAIL'} ${metric}: ${expr}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
