// Every selector, threshold, window and metric name the dashboards and alerts use, in one
// place (kubernetes-mixin style). Limiter metric names come from
// instrumentation/metrics/definitions.ts and the agent's from agent/metrics.ts; the
// mock-provider and k6 names, which the dashboards read over the wire, are typed here once.
import { agentMetrics } from '../agent/metrics.ts';
import { WORKED_EXAMPLE } from '../agent/worked-example.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';

/** Limiter metric names, imported (never retyped). */
export const limiter = Object.fromEntries(
  Object.entries(limiterMetrics).map(([key, def]) => [key, def.name]),
) as { readonly [K in keyof typeof limiterMetrics]: (typeof limiterMetrics)[K]['name'] };

/** Agent service metric names, imported (never retyped). */
export const agent = Object.fromEntries(Object.entries(agentMetrics).map(([key, def]) => [key, def.name])) as {
  readonly [K in keyof typeof agentMetrics]: (typeof agentMetrics)[K]['name'];
};

/** Mock provider metrics (mock-provider/). */
export const mock = {
  requests: 'mock_provider_requests_total',
  tokens: 'mock_provider_tokens_total',
  quotaUsed: 'mock_provider_quota_used',
  quotaLimit: 'mock_provider_quota_limit',
  rateLimited: 'mock_provider_rate_limited_total',
  inFlight: 'mock_provider_in_flight_requests',
  requestDuration: 'mock_provider_request_duration_seconds',
  timeToFirstToken: 'mock_provider_time_to_first_token_seconds',
  faults: 'mock_provider_faults_total',
} as const;

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
} as const;

/** Prometheus scrape job names; the compose Prometheus config spells the same (a test checks it). */
export const jobs = {
  agent: 'quotascope-agent',
  mockProvider: 'quotascope-mock-provider',
} as const;

/** Grafana identity of what we provision. */
export const grafana = {
  datasourceUid: 'quotascope-prometheus',
  datasourceName: 'Prometheus',
  datasourceUrl: 'http://prometheus:9090',
  folderTitle: 'quotascope',
  folderUid: 'quotascope',
  /** Where the compose file mounts grafana/dashboards/ inside the Grafana container. */
  dashboardsPath: '/var/lib/grafana/dashboards',
  scrapeInterval: '5s',
  /** Where the runbooks are (the dashboards README, relative to the repository root): set the published URL here. */
  runbookBase: 'dashboards/README.md',
} as const;

/**
 * Label selectors of the dashboard variables. Panels use these; the run report and the live
 * query test substitute the variables (see instantiate() in panels/spec.ts).
 */
export const selectors = {
  /** Limiter gauges: labelled by limiter (and job/instance by Prometheus). */
  limiter: 'job=~"$job", instance=~"$instance", limiter=~"$limiter"',
  /** Limiter metrics that also carry the calling agent. */
  limiterAgent: 'job=~"$job", instance=~"$instance", limiter=~"$limiter", agent=~"$agent"',
  /** Agent service request metrics. */
  agentService: 'job=~"$job", instance=~"$instance"',
  /** Mock provider metrics on the mock provider's own dashboard (its job/instance variables). */
  mockDashboard: 'job=~"$job", instance=~"$instance"',
  /** Mock provider metrics overlaid on other dashboards: the fixed scrape job. */
  mockProvider: `job="${jobs.mockProvider}"`,
  /** k6 metrics (remote write carries the k6 tags, no job). */
  k6: 'scenario=~"$scenario"',
} as const;

/** Fixed windows of the alert and recording rules (panels use $__rate_interval). */
export const windows = {
  /** The short window of the acquire-time early warning. */
  acquireShort: '2m',
  /** The baseline of the short-window p95: its median over this window. */
  acquireBaseline: '30m',
  /** Rates of timeouts, 429s and finished calls. */
  rate: '5m',
  /** Token estimate drift: long enough to average many calls. */
  drift: '30m',
  /** A permit held this long with no finished call is a leak. */
  leak: '10m',
} as const;

/** Alert thresholds; panels draw the same values as threshold lines. */
export const thresholds = {
  /** The limiter's maxWait in seconds (the worked example's). */
  maxWaitSeconds: WORKED_EXAMPLE.maxWaitMs / 1000,
  /** Acquire p95 above this fraction of maxWait is worth a look... */
  acquireFractionOfMaxWait: 0.25,
  /** ...when it is also this many times its own recent baseline. */
  acquireRiseFactor: 1.5,
  /** Permits in use / limit at or above this is saturated. */
  permitSaturation: 1,
  /** Budget below this fraction of capacity is exhausted. */
  budgetExhaustedFraction: 0.05,
  /** actual/reserved tokens outside [low, high] means the estimate drifted. */
  estimateBand: { low: 0.8, high: 1.2 },
} as const;

/** The acquire-time threshold in seconds, derived from maxWait. */
export const acquireWarnSeconds = thresholds.maxWaitSeconds * thresholds.acquireFractionOfMaxWait;

/** `for` durations of the alerts. */
export const forDurations = {
  acquireRising: '1m',
  timeouts: '1m',
  rateLimited: '2m',
  permitsSaturated: '5m',
  budgetExhausted: '5m',
  budgetNegative: '10m',
  estimateDrift: '15m',
  permitLeak: '5m',
  permitsReclaimed: '1m',
  targetDown: '2m',
} as const;
