// The run's totals from Prometheus (the processes are fresh, so a counter's last value is
// the run's total), the admitted calls' acquire-time percentiles, the timeouts as their own
// count, request admission's own request counts and wasted tokens, and the alerts that fired
// and those still pending or firing at the end.
import { agentMetrics } from '../../agent/metrics.ts';
import { mock } from '../../dashboards/config.ts';
import { limiterMetrics, type TimeoutReason } from '../../instrumentation/metrics/definitions.ts';
import { alerts, alertsFiredBetween, query, queryScalar } from '../measure/prometheus-client.ts';
import { collectQuotaChanges, type QuotaChange } from './markers.ts';

export interface StackTotals {
  requests: number;
  modelCalls: number;
  providerRateLimited: number;
  limiterRateLimited: number;
  /** Calls the limiter gave up on (their waits are not in acquireSeconds). */
  timeouts: number;
  /** The same by reason (permit, budget, queue_full, request_deadline, …); absent in older run records. */
  timeoutsByReason?: Record<string, number>;
  /** Acquire-time quantiles of the admitted calls (outcome="acquired"). */
  acquireSeconds: { p50?: number; p95?: number; p99?: number };
  /** The limiters' maxWait (largest, when they differ), from llm_limiter_max_wait_seconds. */
  maxWaitSeconds?: number;
  alertsFired: string[];
  /** Alerts pending or firing when the run ended, `Name (state)`, one per name and state. */
  alertsActiveAtEnd: string[];
  /** Limiter series Prometheus scraped for the run: 0 means the served /metrics had no limiter metrics. */
  limiterSeries: number;
  /** Request admission's counts by outcome (admitted, shed, completed, partial); empty under per-call admission. */
  limiterRequests: Record<string, number>;
  /** Counted tokens spent by requests that did not end wholly ok, and all counted tokens the provider reported. */
  wastedTokens: number;
  actualTokens: number;
  /** Each change of the mock provider's quotas during the run (older run records have none). */
  quotaChanges?: QuotaChange[];
}

const total = (name: string, seconds: number) => `sum(last_over_time(${name}[${seconds}s]))`;

export async function stackTotals(prometheusUrl: string, start: number, end: number): Promise<StackTotals> {
  const s = Math.max(1, Math.ceil((end - start) / 1000));
  const q = async (expr: string) => (await queryScalar(prometheusUrl, expr, end)) ?? 0;
  const acquire = `sum by (le) (last_over_time(${limiterMetrics.acquireDuration.name}_bucket{outcome="acquired"}[${s}s]))`;
  const quantile = (p: number) => queryScalar(prometheusUrl, `histogram_quantile(${p}, ${acquire})`, end);
  return {
    requests: await q(total(agentMetrics.requests.name, s)),
    modelCalls: await q(total(mock.requests, s)),
    providerRateLimited: await q(total(mock.rateLimited, s)),
    limiterRateLimited: await q(total(limiterMetrics.rateLimited.name, s)),
    timeouts: await q(total(limiterMetrics.timeouts.name, s)),
    timeoutsByReason: await byLabel(prometheusUrl, `sum by (reason) (last_over_time(${limiterMetrics.timeouts.name}[${s}s]))`, 'reason', end),
    acquireSeconds: { p50: await quantile(0.5), p95: await quantile(0.95), p99: await quantile(0.99) },
    maxWaitSeconds: await queryScalar(prometheusUrl, `max(max_over_time(${limiterMetrics.maxWait.name}[${s}s]))`, end),
    alertsFired: await alertsFiredBetween(prometheusUrl, start, end),
    alertsActiveAtEnd: [...new Set((await alerts(prometheusUrl)).map((a) => `${a.name} (${a.state})`))].sort(),
    limiterSeries: await q(`count(last_over_time(${limiterMetrics.calls.name}[${s}s])) or count(last_over_time(${limiterMetrics.permitsLimit.name}[${s}s]))`),
    limiterRequests: await limiterRequests(prometheusUrl, s, end),
    wastedTokens: await q(total(limiterMetrics.wastedTokens.name, s)),
    actualTokens: await q(total(limiterMetrics.tokensActual.name, s)),
    quotaChanges: await collectQuotaChanges(prometheusUrl, start, end),
  };
}

/** A `sum by (label)` query as counts, the label's values that counted anything. */
async function byLabel(prometheusUrl: string, expr: string, label: string, end: number): Promise<Record<string, number>> {
  const samples = await query(prometheusUrl, expr, end);
  return Object.fromEntries(samples.filter((x) => x.value > 0).map((x) => [x.metric[label] ?? 'unknown', Math.round(x.value)]));
}

/** What a limiter timeout's reason means, for people. */
const TIMEOUT_MEANINGS: Record<TimeoutReason, string> = {
  permit: 'waited maxWait for a permit',
  budget: 'waited maxWait for token budget',
  queue_full: 'the waiting queue was full',
  request_deadline: "could not finish before its request's deadline",
};

/** `17 (request_deadline 17: could not finish before its request's deadline)`; `0` when none. */
export function formatTimeouts(total: number, byReason: Record<string, number> | undefined): string {
  const reasons = Object.entries(byReason ?? {}).filter(([, n]) => n > 0);
  if (total === 0 || reasons.length === 0) return String(total);
  return `${total} (${reasons.map(([reason, n]) => `${reason} ${n}${reason in TIMEOUT_MEANINGS ? `: ${TIMEOUT_MEANINGS[reason as TimeoutReason]}` : ''}`).join('; ')})`;
}

/** The busiest limiter's request counts by outcome (every limiter a request draws on counts it). */
async function limiterRequests(prometheusUrl: string, seconds: number, end: number): Promise<Record<string, number>> {
  const samples = await query(prometheusUrl, `max by (outcome) (sum by (limiter, outcome) (last_over_time(${limiterMetrics.requests.name}[${seconds}s])))`, end);
  return Object.fromEntries(samples.map((x) => [x.metric.outcome ?? 'unknown', Math.round(x.value)]));
}
