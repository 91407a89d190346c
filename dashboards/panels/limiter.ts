// The Limiter dashboard: what the RateLimitedLlm does, per replica and per agent.
import { type DashboardsConfig, selectorsOf } from '../config.ts';
import { limiter as m } from '../metrics.ts';
import { quantile, series, sumOf, sumRate } from '../promql.ts';
import { joinSelectors } from '../selector.ts';
import type { DashboardSpec, TargetSpec } from './spec.ts';
import { limiterVariables } from './variables.ts';

const ri = '$__rate_interval';
const acquired = 'outcome="acquired"';

/** Each limiter's early-warning line and maxWait, from its exported maxWait (thresholds differ per limiter). */
export function maxWaitLines(config: DashboardsConfig, selector: string): TargetSpec[] {
  const maxWait = `max by (limiter) (${series(m.maxWait, selector)})`;
  const f = config.thresholds.acquireWarnFractionOfMaxWait;
  return [
    { expr: `${f} * ${maxWait}`, legend: `{{limiter}} early warning (${f} × maxWait)`, reference: 'orange' },
    { expr: maxWait, legend: '{{limiter}} maxWait', reference: 'red' },
  ];
}

/** Each limiter's door-wait warning line and request deadline, from its exported deadline. */
function deadlineLines(config: DashboardsConfig, selector: string): TargetSpec[] {
  const deadline = `max by (limiter) (${series(m.requestDeadline, selector)})`;
  const f = config.thresholds.doorWaitWarnFractionOfDeadline;
  return [
    { expr: `${f} * ${deadline}`, legend: `{{limiter}} door-wait warning (${f} × request deadline)`, reference: 'orange' },
    { expr: deadline, legend: '{{limiter}} request deadline', reference: 'red' },
  ];
}

export function buildLimiterDashboard(config: DashboardsConfig): DashboardSpec {
  const s = selectorsOf(config);
  const l = s.limiter;
  const la = s.limiterAgent;
  const laAcquired = joinSelectors(la, acquired);
  const t = config.thresholds;
  return {
    uid: 'quotascope-limiter',
    title: 'quotascope / Limiter',
    description: 'Permits, queueing, acquire time, token budget and provider errors of the rate-limited model wrapper.',
    tags: ['quotascope', 'limiter'],
    variables: limiterVariables(s),
    rows: [
      {
        title: 'Requests (request admission)',
        panels: [
          {
            key: 'request-outcomes',
            title: 'Requests by outcome',
            description:
              'User requests per second by outcome under request admission: admitted (funded whole at the door), shed (refused whole with a 429 before any model call), abandoned (the client left while waiting at the door: 499), completed (ended with every call ok) and partial (ended with some call not ok). Shed is what the budget cannot fund in time; partial should stay near zero.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(m.requests, l, ri, ['outcome']), legend: '{{outcome}}' }],
            quietRunEmpty: 'the counter has no series under per-call admission (--admission call), where no request is admitted as a whole',
          },
          {
            key: 'request-admission-wait',
            title: 'Request admission wait p50 / p95 / p99 (admitted requests)',
            description:
              "Time from a request's arrival to its admission, for the admitted requests, and, on the right axis, the requests per second shed at the door. Red: each limiter's request deadline: a request that cannot be funded by then is shed.",
            unit: 's',
            kind: 'timeseries',
            min: 0,
            targets: [
              ...[0.5, 0.95, 0.99].map((q) => ({
                expr: quantile(q, m.requestAdmission, joinSelectors(l, 'outcome="admitted"'), ri),
                legend: `p${Math.round(q * 100)}`,
              })),
              // Arrivals less admissions: 0 while requests arrive and none is shed (the shed series alone has none until the first shed).
              {
                expr: `${sumRate(m.requests, joinSelectors(l, 'outcome=~"admitted|shed"'), ri)} - ${sumRate(m.requests, joinSelectors(l, 'outcome="admitted"'), ri)}`,
                legend: 'shed /s',
                unit: 'ops',
              },
              { expr: `max by (limiter) (${series(m.requestDeadline, l)})`, legend: '{{limiter}} request deadline', reference: 'red' },
            ],
            quietRunEmpty: 'the histogram has no series under per-call admission (--admission call)',
          },
          {
            key: 'wasted-tokens',
            title: `Wasted tokens per minute (${config.countedTokens} tokens counted)`,
            description: `Counted tokens spent by requests that did not end wholly ok (their answer lacks a branch, so the tokens bought nothing whole), per minute, and on the right axis as a share of all tokens the provider reported. Request admission keeps it near zero.`,
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: [
              { expr: `${sumRate(m.wastedTokens, l, ri)} * 60`, legend: 'wasted' },
              { expr: `${sumRate(m.wastedTokens, l, ri)} / ${sumRate(m.tokensActual, l, ri)}`, legend: 'share of actual', unit: 'percentunit' },
            ],
            quietRunEmpty: 'the counter has no series until a request ends not wholly ok',
          },
        ],
      },
      {
        title: 'Saturation',
        panels: [
          {
            key: 'permits',
            title: 'Permits in use vs limit',
            description:
              'Permits held right now and the current permit limit, per replica. In use pinned at the limit means calls queue for permits.',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: [
              { expr: sumOf(m.permitsInUse, l, ['instance']), legend: '{{instance}} in use' },
              { expr: sumOf(m.permitsLimit, l, ['instance']), legend: '{{instance}} limit' },
            ],
          },
          {
            key: 'permit-utilisation',
            title: 'Permit utilisation',
            description:
              'Permits in use divided by the limit, per replica. The "permits saturated" alert fires when this stays at the red line for minutes.',
            unit: 'percentunit',
            kind: 'timeseries',
            min: 0,
            thresholds: [{ value: t.permitSaturation, color: 'red' }],
            targets: [
              {
                expr: `${sumOf(m.permitsInUse, l, ['instance'])} / ${sumOf(m.permitsLimit, l, ['instance'])}`,
                legend: '{{instance}}',
              },
            ],
          },
          {
            key: 'waiting',
            title: 'Waiting calls',
            description: 'Calls queued for a permit or for token budget, per replica. Any queue means demand exceeds what the limiter admits.',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumOf(m.waitingCalls, l, ['instance']), legend: '{{instance}}' }],
          },
          {
            key: 'littles-law',
            title: "Calls in flight: measured vs Little's law",
            description:
              "Permits in use (scraped gauge), permits held (measured: the rate of permit-seconds, the exact mean over the window) and call rate × mean call time (Little's law, L = λW). Held above rate × latency is time a permit waits for token budget; measured well above both points at permits held without a call: a leak.",
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            callsInFlight: true,
            targets: [
              { expr: sumOf(m.permitsInUse, l), legend: 'measured (permits in use)' },
              { expr: sumRate(m.permitSeconds, l, ri), legend: 'permits held (measured)' },
              { expr: sumRate(`${m.callDuration}_sum`, la, ri), legend: 'rate × latency' },
            ],
          },
        ],
      },
      {
        title: 'Acquire time',
        panels: [
          {
            key: 'wait-door-vs-permit',
            title: 'Wait users feel: door wait vs permit wait p95',
            description: `The p95 time user requests waited at the door (request admission, admitted and shed requests) next to the p95 time their admitted calls waited for a permit and budget. Under request admission the queueing happens at the door, so the door wait rises first as demand nears the quota; the permit wait stays near zero. Orange: each limiter's door-wait warning line (${t.doorWaitWarnFractionOfDeadline} × its request deadline); red: the request deadline.`,
            unit: 's',
            kind: 'timeseries',
            min: 0,
            targets: [
              { expr: quantile(0.95, m.requestAdmission, joinSelectors(l, 'outcome=~"admitted|shed"'), ri, ['limiter']), legend: '{{limiter}} door wait p95' },
              { expr: quantile(0.95, m.acquireDuration, laAcquired, ri, ['limiter']), legend: '{{limiter}} permit wait p95' },
              ...deadlineLines(config, l),
            ],
            quietRunEmpty: 'the door wait has no series under per-call admission (--admission call), where requests have no door',
          },
          {
            key: 'acquire-quantiles',
            title: 'Acquire time p50 / p95 / p99 (admitted calls) and timeouts',
            description: `Time from call to admission (permit and budget) of the calls that were admitted, and, on the right axis, the calls per second that gave up at maxWait (their waits would only pin the quantiles at maxWait). Orange: each limiter's early-warning line (${t.acquireWarnFractionOfMaxWait} × its maxWait); red: its maxWait, where calls time out. It rises before any 429.`,
            unit: 's',
            kind: 'timeseries',
            min: 0,
            targets: [
              ...[0.5, 0.95, 0.99].map((q) => ({
                expr: quantile(q, m.acquireDuration, laAcquired, ri),
                legend: `p${Math.round(q * 100)}`,
              })),
              {
                expr: sumRate(`${m.acquireDuration}_count`, joinSelectors(la, 'outcome="timeout"'), ri),
                legend: 'timed out /s',
                unit: 'ops',
              },
              ...maxWaitLines(config, l),
            ],
          },
          {
            key: 'acquire-p95-by-agent',
            title: 'Acquire time p95 by agent (admitted calls)',
            description: 'Acquire time p95 of the admitted calls per calling agent: shows whether one agent of the tree waits longer than its siblings.',
            unit: 's',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: quantile(0.95, m.acquireDuration, laAcquired, ri, ['agent']), legend: '{{agent}}' }, ...maxWaitLines(config, l)],
          },
          {
            key: 'acquire-heatmap',
            title: 'Acquire time distribution (admitted calls)',
            description: 'Heatmap of the admitted calls\' acquire times from the histogram buckets: a band moving up is queueing building up.',
            unit: 's',
            kind: 'heatmap',
            targets: [{ expr: sumRate(`${m.acquireDuration}_bucket`, laAcquired, ri, ['le']), legend: '{{le}}' }],
          },
          {
            key: 'timeouts',
            title: 'Timeouts by reason',
            description: 'Calls refused admission, per second, by reason: permit or budget (maxWait expired waiting for it), queue_full (maxWaiting calls were already waiting: refused at once). Each is a model call that never ran.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(m.timeouts, la, ri, ['reason']), legend: '{{reason}}' }],
            quietRunEmpty: 'the counter has no series until a call times out, which a run within the budget never does',
          },
        ],
      },
      {
        title: 'Tokens',
        panels: [
          {
            key: 'tokens-per-minute',
            title: `Tokens per minute (${config.countedTokens} tokens counted): reserved vs actual vs budget capacity`,
            description: `Tokens reserved up front (estimates) and reported by the provider, per minute, against the budget capacity the limiters are configured with (all replicas) and the effective limit (below the capacity while a provider 429 has stepped it down, or an adaptive limit moved it), all in the tokens the budgets count: ${config.countedTokens}.`,
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            span: 24,
            targets: [
              { expr: `${sumRate(m.tokensReserved, la, ri)} * 60`, legend: 'reserved' },
              { expr: `${sumRate(m.tokensActual, la, ri)} * 60`, legend: 'actual' },
              { expr: sumOf(m.budgetCapacity, l), legend: 'budget capacity', reference: 'red' },
              { expr: sumOf(m.budgetWindowLimit, l), legend: 'effective limit (stepped down by 429s)' },
            ],
          },
          {
            key: 'estimate-accuracy',
            title: `Actual / reserved ${config.countedTokens} tokens by agent`,
            description: `How good the token estimate is, per agent: 100 % is exact, above means underestimates (the budget goes negative), below means capacity is wasted. The drift alert fires outside ${t.estimateBand.low}–${t.estimateBand.high}.`,
            unit: 'percentunit',
            kind: 'timeseries',
            min: 0,
            thresholds: [
              { value: t.estimateBand.low, color: 'orange' },
              { value: t.estimateBand.high, color: 'red' },
            ],
            targets: [
              {
                expr: `${sumRate(m.tokensActual, la, ri, ['agent'])} / ${sumRate(m.tokensReserved, la, ri, ['agent'])}`,
                legend: '{{agent}}',
              },
            ],
          },
          {
            key: 'budget-level',
            title: 'Token budget level',
            description:
              'Tokens available in the bucket per replica, with its capacity, and the tokens its rolling-minute guard counts in the last 60 s (actual usage once settled). The bucket may go negative when an underestimate is reconciled; persistently at or below zero means the budget binds. Window tokens at the capacity while the bucket still has tokens: the guard is holding back a burst a per-minute provider quota would refuse. Orange: the budget-exhausted alert line, a fraction of each replica\'s capacity.',
            unit: 'short',
            kind: 'timeseries',
            thresholds: [{ value: 0, color: 'red' }],
            targets: [
              { expr: sumOf(m.budgetAvailable, l, ['instance']), legend: '{{instance}} available' },
              { expr: sumOf(m.budgetCapacity, l, ['instance']), legend: '{{instance}} capacity' },
              { expr: sumOf(m.budgetWindow, l, ['instance']), legend: '{{instance}} last 60 s' },
              {
                expr: `${t.budgetExhaustedFractionOfCapacity} * ${sumOf(m.budgetCapacity, l, ['instance'])}`,
                legend: `{{instance}} exhausted below (${t.budgetExhaustedFractionOfCapacity} × capacity)`,
                reference: 'orange',
              },
            ],
          },
        ],
      },
      {
        title: 'Calls and provider errors',
        panels: [
          {
            key: 'call-outcomes',
            title: 'Call outcomes',
            description: 'Finished calls per second by outcome: ok, error, rate_limited, cancelled, timeout.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(m.calls, la, ri, ['outcome']), legend: '{{outcome}}' }],
          },
          {
            key: 'rate-limited',
            title: '429s and retries by agent',
            description:
              'Provider rate-limit errors seen (every attempt) and retries issued, per agent. With the limiter sized right this stays at zero.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [
              { expr: sumRate(m.rateLimited, la, ri, ['agent']), legend: '{{agent}} 429' },
              { expr: sumRate(m.retries, la, ri, ['agent']), legend: '{{agent}} retry' },
            ],
            quietRunEmpty: 'the counters have no series until the provider answers 429, which the limiter exists to prevent',
          },
          {
            key: 'call-duration',
            title: 'Model call time p50 / p95',
            description: 'Model call time after admission, retries included: the W of Little\'s law.',
            unit: 's',
            kind: 'timeseries',
            min: 0,
            targets: [0.5, 0.95].map((q) => ({
              expr: quantile(q, m.callDuration, la, ri),
              legend: `p${Math.round(q * 100)}`,
            })),
          },
          {
            key: 'permits-reclaimed',
            title: 'Permits reclaimed (leaks)',
            description: 'Permits reclaimed because a call held one past the maximum call time. Anything above zero is a leak.',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            thresholds: [{ value: 1, color: 'red' }],
            targets: [{ expr: `sum by (instance) (increase(${series(m.permitsReclaimed, l)}[${ri}]))`, legend: '{{instance}}' }],
            quietRunEmpty: 'the counter has no series until a permit is reclaimed, which needs a call stuck past the maximum call time',
          },
        ],
      },
    ],
  };
}
