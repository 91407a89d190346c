// Every metric name the dashboards and alerts read. Limiter names come from
// instrumentation/metrics/definitions.ts, the agent's from agent/metrics.ts and the mock
// provider's from mock-provider/metrics.ts; the k6 names, which only k6's remote write
// produces, are typed here once.
import { agentMetrics } from '../agent/metrics.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { mockProviderMetrics } from '../mock-provider/metrics.ts';

/** Limiter metric names, imported (never retyped). */
export const limiter = Object.fromEntries(
  Object.entries(limiterMetrics).map(([key, def]) => [key, def.name]),
) as { readonly [K in keyof typeof limiterMetrics]: (typeof limiterMetrics)[K]['name'] };

/** Agent service metric names, imported (never retyped). */
export const agent = Object.fromEntries(Object.entries(agentMetrics).map(([key, def]) => [key, def.name])) as {
  readonly [K in keyof typeof agentMetrics]: (typeof agentMetrics)[K]['name'];
};

/** Mock provider metric names, imported (never retyped). */
export const mock = Object.fromEntries(Object.entries(mockProviderMetrics).map(([key, def]) => [key, def.name])) as {
  readonly [K in keyof typeof mockProviderMetrics]: (typeof mockProviderMetrics)[K]['name'];
};

/** k6 metrics as Prometheus receives them through remote write (trend stats mode). */
export const k6 = {
  httpReqs: 'k6_http_reqs_total',
  httpReqFailed: 'k6_http_req_failed_rate',
  httpReqDurationP95: 'k6_http_req_duration_p95',
  httpReqDurationP99: 'k6_http_req_duration_p99',
  vus: 'k6_vus',
  requestDurationP95: 'k6_qs_request_duration_p95',
  requestDurationP99: 'k6_qs_request_duration_p99',
  permitWaitP95: 'k6_qs_permit_wait_p95',
  missingBranches: 'k6_qs_missing_branches_rate',
  branchOutcomes: 'k6_qs_branch_outcomes_total',
  requestOutcomes: 'k6_qs_request_outcome_total',
  requestsStarted: 'k6_qs_requests_started_total',
} as const;
