// The run's totals from Prometheus (the processes are fresh, so a counter's last value is
// the run's total), the admitted calls' acquire-time percentiles, the timeouts as their own
// count, request admission's own request counts and wasted tokens, and the alerts that fired
// and those still pending or firing at the end.
import type { TimeoutReason } from '../../instrumentation/metrics/definitions.ts';
import { type Answers, answerQueries, type Sample } from '../measure/prometheus-client.ts';
import { totalsQueries } from '../measure/run-queries.ts';
import { type QuotaChange, quotaChanges } from './markers.ts';

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

/** The run's totals over [start, end] (epoch ms) from Prometheus, in one pass. */
export async function stackTotals(prometheusUrl: string, start: number, end: number): Promise<StackTotals> {
  return stackTotalsOf(await answerQueries(prometheusUrl, totalsQueries(start, end)));
}

/** A `sum by (label)` answer as counts, the label's values that counted anything. */
const countsByLabel = (samples: readonly Sample[], label: string): Record<string, number> =>
  Object.fromEntries(samples.filter((x) => x.value > 0).map((x) => [x.metric[label] ?? 'unknown', Math.round(x.value)]));

/** The totals from the answers to totalsQueries (run-queries.ts; pure). */
export function stackTotalsOf(a: Answers<ReturnType<typeof totalsQueries>>): StackTotals {
  return {
    requests: a.requests ?? 0,
    modelCalls: a.modelCalls ?? 0,
    providerRateLimited: a.providerRateLimited ?? 0,
    limiterRateLimited: a.limiterRateLimited ?? 0,
    timeouts: a.timeouts ?? 0,
    timeoutsByReason: countsByLabel(a.timeoutsByReason, 'reason'),
    acquireSeconds: a.acquireSeconds,
    maxWaitSeconds: a.maxWaitSeconds,
    alertsFired: a.alertsFired.map((s) => s.metric.alertname).sort(),
    alertsActiveAtEnd: [...new Set(a.alertsActiveAtEnd.map((x) => `${x.name} (${x.state})`))].sort(),
    limiterSeries: a.limiterSeries ?? 0,
    // The busiest limiter's request counts by outcome (every limiter a request draws on counts it).
    limiterRequests: Object.fromEntries(a.limiterRequests.map((x) => [x.metric.outcome ?? 'unknown', Math.round(x.value)])),
    wastedTokens: a.wastedTokens ?? 0,
    actualTokens: a.actualTokens ?? 0,
    quotaChanges: quotaChanges(a.quotaLimits),
  };
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
