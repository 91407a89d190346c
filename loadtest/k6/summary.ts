// What a run's client reports, condensed: k6's end-of-test summary JSON (handleSummary's
// data) read into the figures the run prints, records and judges; the Node driver reports the same.
import { REQUEST_FAILED_METRIC, type RequestCounts, SERVED_DURATION_METRIC } from './request-status.ts';
import { branchOutcomeCounts, isDisplayOnly, requestCounts, statusCounts } from './summary-text.ts';

export interface ThresholdResult {
  metric: string;
  expression: string;
  ok: boolean;
}

export interface K6Summary {
  requests: number;
  /** Share of HTTP requests that failed (k6's http_req_failed; ADK: two per user request). */
  failedRate: number;
  /** User requests that failed: no 2xx answer (shed ones aside), or no branch ok (k6/request-status.ts). */
  failedRequests: number;
  /** Every started user request by how it ended (unfinished: the run ended first). Absent in older run records. */
  outcomes: RequestCounts;
  /** The HTTP status each user request ended with, by status tag (only those seen). */
  statusCodes: Record<string, number>;
  /** Every answered request's duration: the instant 429s of shed requests included. */
  durationMs: { p50: number; p95: number; p99: number; max: number };
  /** Served requests' durations alone (absent in older run records). */
  servedDurationMs?: { p50: number; p95: number; p99: number; max: number };
  permitWaitMs: { p50: number; p95: number; max: number };
  missingBranchesRate: number;
  branchOutcomes: number;
  /** Branch outcomes by kind (ok, timeout, rate_limited, budget_unavailable, error); absent in older run records. */
  branchOutcomesByKind?: Record<string, number>;
  /** Model calls and tokens read from the events (ADK protocol only). */
  modelCalls?: number;
  modelTokens?: number;
  droppedArrivals: number;
  testRunDurationMs: number;
  thresholds: ThresholdResult[];
}

// biome-ignore lint/suspicious/noExplicitAny: k6's summary data is an untyped JSON tree
export function condenseSummary(data: any): K6Summary {
  const v = (name: string, stat: string): number => Number(data?.metrics?.[name]?.values?.[stat] ?? 0);
  const thresholds: ThresholdResult[] = [];
  for (const [metric, m] of Object.entries<{ thresholds?: Record<string, { ok: boolean }> }>(data?.metrics ?? {})) {
    for (const [expression, t] of Object.entries(m.thresholds ?? {})) if (!isDisplayOnly(metric, expression)) thresholds.push({ metric, expression, ok: t.ok });
  }
  return {
    requests: v('qs_request_duration', 'count'), // one per user request (ADK: session + run are two HTTP requests)
    failedRate: v('http_req_failed', 'rate'),
    failedRequests: v(REQUEST_FAILED_METRIC, 'passes'),
    outcomes: requestCounts(data),
    statusCodes: statusCounts(data),
    durationMs: {
      p50: v('qs_request_duration', 'med'),
      p95: v('qs_request_duration', 'p(95)'),
      p99: v('qs_request_duration', 'p(99)'),
      max: v('qs_request_duration', 'max'),
    },
    servedDurationMs: {
      p50: v(SERVED_DURATION_METRIC, 'med'),
      p95: v(SERVED_DURATION_METRIC, 'p(95)'),
      p99: v(SERVED_DURATION_METRIC, 'p(99)'),
      max: v(SERVED_DURATION_METRIC, 'max'),
    },
    permitWaitMs: { p50: v('qs_permit_wait', 'med'), p95: v('qs_permit_wait', 'p(95)'), max: v('qs_permit_wait', 'max') },
    missingBranchesRate: v('qs_missing_branches', 'rate'),
    branchOutcomes: v('qs_branch_outcomes', 'count'),
    branchOutcomesByKind: branchOutcomeCounts(data),
    modelCalls: v('qs_model_calls', 'count'),
    modelTokens: v('qs_model_tokens', 'count'),
    droppedArrivals: v('dropped_iterations', 'count'),
    testRunDurationMs: Number(data?.state?.testRunDurationMs ?? 0),
    thresholds,
  };
}
