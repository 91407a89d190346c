// Every Prometheus query a finished run needs, as data: the steady window's figures (per
// limited model, or the fleet's), the completions in that window, the provider's answers, the
// totals of a stack the run started, and the report's panels, alerts and markers. The client
// answers them in one pass (prometheus-client.ts answerQueries); the decoders beside each
// figure (steady-collect.ts, run-outcome.ts, report/summary.ts, report/collect.ts,
// report/markers.ts) read the answers. Nothing here queries.
import { agentMetrics } from '../../agent/metrics.ts';
import { durationSeconds, mock } from '../../dashboards/config.ts';
import { dashboards, instantiate, panelsOf } from '../../dashboards/index.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import type { AlertRulesQuery, AlertsQuery, InstantQuery, RangeQuery } from './prometheus-client.ts';

/** Markers are read at this many points per series at most (Prometheus allows 11,000). */
const MAX_MARKER_POINTS = 5000;

/** The query step for a range: about 300 points per series, at least 1 s. */
export function stepSecondsFor(start: number, end: number): number {
  return Math.max(1, Math.round((end - start) / 1000 / 300));
}

/** $__rate_interval as Grafana derives it: four times the larger of the query step and the scrape interval. */
export function rateIntervalFor(start: number, end: number, scrapeIntervalSeconds: number): string {
  return `${4 * Math.max(stepSecondsFor(start, end), scrapeIntervalSeconds)}s`;
}

/** A step fine enough to place a marker within a scrape or two: at least 1 s. */
export function markerStepSeconds(from: number, to: number): number {
  return Math.max(1, Math.ceil((to - from) / 1000 / MAX_MARKER_POINTS));
}

const instant = (expr: string, time: number): InstantQuery & { kind: 'instant' } => ({ kind: 'instant', expr, time });
const scalar = (expr: string, time: number): InstantQuery & { kind: 'scalar' } => ({ kind: 'scalar', expr, time });

/** One limited model's steady figures over [start, end] (epoch ms): its successful calls by agent, its calls in flight. */
export function modelQueries(start: number, end: number, limiter: string) {
  const seconds = Math.max(1, Math.round((end - start) / 1000));
  const w = `[${seconds}s]`;
  const l = `limiter=${JSON.stringify(limiter)}`;
  return {
    seconds,
    okCallsByAgent: instant(`sum by (agent) (increase(${limiterMetrics.calls.name}{outcome="ok",${l}}${w}))`, end),
    callsInFlight: scalar(`sum(rate(${limiterMetrics.callDuration.name}_sum{${l}}${w}))`, end),
  };
}

/**
 * Whole requests by how request admission admitted and ended them in [start, end] (epoch ms).
 * Every limiter a request draws on counts it once, so the busiest limiter's count is the
 * fleet's; `admissions` (admitted or shed anywhere) is 0 where no limiter admitted a request.
 */
export function requestOutcomeQueries(start: number, end: number) {
  const w = `[${Math.max(1, Math.round((end - start) / 1000))}s]`;
  const name = limiterMetrics.requests.name;
  const byOutcome = (outcome: string) => scalar(`max(sum by (limiter) (increase(${name}{outcome="${outcome}"}${w})))`, end);
  return {
    admissions: scalar(`sum(increase(${name}{outcome=~"admitted|shed"}${w}))`, end),
    admitted: byOutcome('admitted'),
    shed: byOutcome('shed'),
    partial: byOutcome('partial'),
  };
}

/** The fleet's steady figures over [start, end] (epoch ms), summed over replicas. */
export function fleetQueries(start: number, end: number) {
  const seconds = Math.max(1, Math.round((end - start) / 1000));
  const w = `[${seconds}s]`;
  const d = limiterMetrics.callDuration.name;
  return {
    seconds,
    completed: scalar(`sum(increase(${agentMetrics.requests.name}${w}))`, end),
    okCalls: scalar(`sum(increase(${limiterMetrics.calls.name}{outcome="ok"}${w}))`, end),
    callsInFlight: scalar(`sum(rate(${d}_sum${w}))`, end),
    callSeconds: scalar(`sum(increase(${d}_sum${w})) / sum(increase(${d}_count${w}))`, end),
    permitsInUseScraped: scalar(`avg_over_time(sum(${limiterMetrics.permitsInUse.name})[${seconds}s:1s])`, end),
    ...requestOutcomeQueries(start, end),
  };
}

/** The steady window's figures: per model when `models` are the tree's limited models (limitedModels), with the fleet's request outcomes; else the fleet's (which hold them). */
export function steadyQueries(window: { start: number; end: number }, models: readonly { model: string; limiter?: string }[]) {
  if (models.length > 0) {
    const requests = requestOutcomeQueries(window.start, window.end);
    return { kind: 'models' as const, requests, models: models.map((m) => ({ model: m.model, ...modelQueries(window.start, window.end, m.limiter as string) })) };
  }
  return { kind: 'fleet' as const, fleet: fleetQueries(window.start, window.end) };
}

/** Requests the agent side answered 2xx in [start, end] (epoch ms). */
export function completionsQuery(start: number, end: number): InstantQuery & { kind: 'scalar' } {
  const seconds = Math.max(1, Math.round((end - start) / 1000));
  return scalar(`sum(increase(${agentMetrics.requests.name}{status=~"2.."}[${seconds}s]))`, end);
}

/** The mock provider's answers by HTTP status over [start, end] (epoch ms; fresh processes: last value = total); may fail. */
export function providerStatusQuery(start: number, end: number): InstantQuery & { kind: 'instant'; orError: true } {
  const seconds = Math.max(1, Math.ceil((end - start) / 1000));
  return { ...instant(`sum by (status) (last_over_time(${mock.requests}[${seconds}s]))`, end), orError: true };
}

const total = (name: string, seconds: number) => `sum(last_over_time(${name}[${seconds}s]))`;

/** The run's totals over [start, end] (epoch ms; the processes are fresh, so a counter's last value is the run's total). */
export function totalsQueries(start: number, end: number) {
  const s = Math.max(1, Math.ceil((end - start) / 1000));
  const acquire = `sum by (le) (last_over_time(${limiterMetrics.acquireDuration.name}_bucket{outcome="acquired"}[${s}s]))`;
  const quantile = (p: number) => scalar(`histogram_quantile(${p}, ${acquire})`, end);
  const alertsNow: AlertsQuery = { kind: 'alerts' };
  return {
    requests: scalar(total(agentMetrics.requests.name, s), end),
    modelCalls: scalar(total(mock.requests, s), end),
    providerRateLimited: scalar(total(mock.rateLimited, s), end),
    limiterRateLimited: scalar(total(limiterMetrics.rateLimited.name, s), end),
    timeouts: scalar(total(limiterMetrics.timeouts.name, s), end),
    timeoutsByReason: instant(`sum by (reason) (last_over_time(${limiterMetrics.timeouts.name}[${s}s]))`, end),
    acquireSeconds: { p50: quantile(0.5), p95: quantile(0.95), p99: quantile(0.99) },
    maxWaitSeconds: scalar(`max(max_over_time(${limiterMetrics.maxWait.name}[${s}s]))`, end),
    alertsFired: instant(`max by (alertname) (max_over_time(ALERTS{alertstate="firing"}[${s}s]))`, end),
    alertsActiveAtEnd: alertsNow,
    limiterSeries: scalar(`count(last_over_time(${limiterMetrics.calls.name}[${s}s])) or count(last_over_time(${limiterMetrics.permitsLimit.name}[${s}s]))`, end),
    limiterRequests: instant(`max by (outcome) (sum by (limiter, outcome) (last_over_time(${limiterMetrics.requests.name}[${s}s])))`, end),
    wastedTokens: scalar(total(limiterMetrics.wastedTokens.name, s), end),
    actualTokens: scalar(total(limiterMetrics.tokensActual.name, s), end),
    quotaLimits: { kind: 'range', expr: mock.quotaLimit, start, end, step: markerStepSeconds(start, end) } satisfies RangeQuery,
  };
}

/** The markers' series over [from, to]: the provider's 429s, the requests shed at the door, the mock's quota limits. */
export function markerQueries(from: number, to: number) {
  const step = markerStepSeconds(from, to);
  const range = (expr: string): RangeQuery => ({ kind: 'range', expr, start: from, end: to, step });
  return { step, rateLimited: range(mock.rateLimited), shed: range(`${limiterMetrics.requests.name}{outcome="shed"}`), quotaLimits: range(mock.quotaLimit) };
}

/**
 * The report's queries over [from, to]: the alerting rules first (when they cannot be read,
 * Prometheus is unreachable and the rest is not asked), every panel's targets of every
 * generated dashboard (a refused one is the chart's error), the ALERTS series and the markers.
 */
export function reportQueries(from: number, to: number, rateInterval: string) {
  const step = stepSecondsFor(from, to);
  const range = (expr: string): RangeQuery & { orError: true } => ({ kind: 'range', expr, start: from, end: to, step, orError: true });
  const alertRules: AlertRulesQuery & { orError: true; gate: true } = { kind: 'alert-rules', orError: true, gate: true };
  const markers = markerQueries(from, to);
  return {
    alertRules,
    step,
    /** The panels' rate window, ms: a trailing mean of the probe's samples covers as much. */
    rateWindowMs: (durationSeconds(rateInterval) ?? 0) * 1000,
    panels: dashboards.flatMap((dashboard) => panelsOf(dashboard).map((panel) => ({ id: `${dashboard.uid}/${panel.key}`, targets: panel.targets.map((t) => range(instantiate(t.expr, { rateInterval }))) }))),
    alerts: { kind: 'range', expr: 'ALERTS', start: from, end: to, step } satisfies RangeQuery,
    markers,
  };
}

/** What a finished run asks Prometheus about. */
export interface RunQueryInput {
  /** The steady window (epoch ms) and the tree's limited models: plan vs measured's figures. */
  steady?: { window: { start: number; end: number }; models: readonly { model: string; limiter?: string }[] };
  /** The window whose 2xx completions the verdict counts (a stack of the run's own, with a steady phase). */
  completions?: { start: number; end: number };
  /** From the driver's start to now (epoch ms): the provider's answers, and the totals where `totals`. */
  run: { start: number; end: number };
  totals: boolean;
  /** The report's range (from time 0 of the scenario) and the panels' rate interval. */
  report: { from: number; to: number; rateInterval: string };
}

/** Every query of a finished run, as one tree for one pass (answerQueries): steady figures, completions, statuses, totals, report. */
export function runQueries(r: RunQueryInput) {
  return {
    steady: r.steady ? steadyQueries(r.steady.window, r.steady.models) : undefined,
    completions: r.completions ? completionsQuery(r.completions.start, r.completions.end) : undefined,
    statuses: providerStatusQuery(r.run.start, r.run.end),
    totals: r.totals ? totalsQueries(r.run.start, r.run.end) : undefined,
    report: reportQueries(r.report.from, r.report.to, r.report.rateInterval),
  };
}
