// The promtool unit tests of the alerts, as data: for every alert a synthetic series that
// fires it and one that must stay silent. render/promtool-tests.ts turns these cases into
// the rules test file; the expected annotations are rendered from the alert specs
// themselves, with the expected values filled in. The series carry labels that the
// configured selectors accept, so the same cases test a user's config; the acquire-time
// cases run at a maxWait of 20 s and of 5 s, with each limiter's maxWait gauge as input.
import { ADMISSION_SECONDS_BUCKETS, acquireSecondsBuckets } from '../instrumentation/metrics/definitions.ts';
import { type DashboardsConfig, jobs } from './config.ts';
import { limiter as m } from './metrics.ts';
import { labelsRejected, labelsSatisfying, parseMatchers } from './selector.ts';

export interface InputSeries {
  /** `metric{labels}` */
  readonly series: string;
  /** promtool expanding notation, one sample per minute: `0+60x20` = 0, 60, ... 21 samples. */
  readonly values: string;
}

export interface ExpectedAlert {
  /** The alert's labels, severity and the configured extra labels excluded (added from the spec). */
  readonly labels: Readonly<Record<string, string>>;
  /** The humanized alert value as the annotation shows it. */
  readonly value: string;
  /** Humanized extra values, by the spec's extras names. */
  readonly extras?: Readonly<Record<string, string>>;
}

export interface AlertCheck {
  /** Minutes since the start of the series. */
  readonly atMinute: number;
  readonly alert: string;
  /** Firing alerts expected; empty = silent. */
  readonly firing: readonly ExpectedAlert[];
}

export interface AlertTestCase {
  readonly name: string;
  readonly series: readonly InputSeries[];
  readonly checks: readonly AlertCheck[];
}

type Labels = Readonly<Record<string, string>>;

function seriesOf(metric: string, labels: Labels): string {
  const body = Object.entries(labels)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
  return `${metric}{${body}}`;
}

/** An acquire-time bucket bound that the limiter's buckets for `maxWaitSeconds` really have. */
function bucketBound(maxWaitSeconds: number, bound: number): string {
  if (!acquireSecondsBuckets(maxWaitSeconds).includes(bound)) {
    throw new Error(`${bound} s is not an acquire-time bucket bound for a maxWait of ${maxWaitSeconds} s`);
  }
  return String(bound);
}

/** A request admission-wait bucket bound that the histogram really has. */
function admissionBound(bound: number): string {
  if (!(ADMISSION_SECONDS_BUCKETS as readonly number[]).includes(bound)) throw new Error(`${bound} s is not a request admission-wait bucket bound`);
  return String(bound);
}

export function buildAlertTestCases(config: DashboardsConfig): AlertTestCase[] {
  const agentMatchers = parseMatchers(config.selectors.agent);
  const scrape = labelsSatisfying(agentMatchers, { job: jobs.agent });
  const job = scrape.job;
  const at = (metric: string, labels: Labels, values: string): InputSeries => ({ series: seriesOf(metric, labels), values });
  const replica = (instance: string, limiter = 'gemini'): Labels => ({ ...scrape, instance, limiter });
  /** Labels of an alert on a `sum by (job, instance, limiter)`. */
  const perReplica = (instance: string, limiter = 'gemini'): Labels => ({ job, instance, limiter });
  const perLimiter = (limiter = 'gemini'): Labels => ({ job, limiter });
  const reviewer = (labels: Labels, extra: Labels = {}): Labels => ({ ...labels, agent: 'reviewer', ...extra });

  /** Admitted-call histogram with every admission in one bucket range, for each `le` given. */
  const acquireHistogram = (labels: Labels, perLe: Record<string, string>): InputSeries[] => {
    const acquired = { ...labels, outcome: 'acquired' };
    return [
      ...Object.entries(perLe).map(([le, values]) => at(`${m.acquireDuration}_bucket`, { ...acquired, le }, values)),
      at(`${m.acquireDuration}_count`, acquired, perLe['+Inf']),
    ];
  };
  const maxWaitGauge = (labels: Labels, seconds: number, minutes: number) => at(m.maxWait, labels, `${seconds}x${minutes}`);

  /** Admissions move at 20m from under 5 ms into (0.2, 0.4] × maxWait: p95 = 0.39 × maxWait, above 0.25 × maxWait. */
  const risingCase = (maxWait: number, withRateLimits: boolean): AlertTestCase => {
    const lo = bucketBound(maxWait, 0.2 * maxWait);
    const hi = bucketBound(maxWait, 0.4 * maxWait);
    const p95 = `${Number((0.39 * maxWait).toPrecision(3))}s`;
    const gemini = replica('agent-1:8080');
    const steady = replica('agent-1:8080', 'steady');
    return {
      name: withRateLimits
        ? `maxWait ${maxWait} s: acquire time rises at 20m and fires the early warning before the 429s that start at 35m`
        : `maxWait ${maxWait} s: acquire time rises at 20m and fires the early warning; a limiter that always waited that long does not`,
      series: [
        maxWaitGauge(gemini, maxWait, 60),
        maxWaitGauge(steady, maxWait, 60),
        // 60 admissions/min: all under 5 ms until 20m, then all in (lo, hi].
        ...acquireHistogram(reviewer(gemini), { '0.005': '0+60x20 1200+0x40', [lo]: '0+60x20 1200+0x40', [hi]: '0+60x60', '+Inf': '0+60x60' }),
        // Silent: a limiter that has always waited that long is slow, not rising.
        ...acquireHistogram(reviewer(steady), { '0.005': '0x60', [lo]: '0x60', [hi]: '0+60x60', '+Inf': '0+60x60' }),
        // 429s from 36m on, 10 per minute.
        ...(withRateLimits ? [at(m.rateLimited, reviewer(gemini), '0x35 1+10x24')] : []),
      ],
      checks: [
        { atMinute: 15, alert: 'LimiterAcquireTimeRising', firing: [] },
        { atMinute: 25, alert: 'LimiterAcquireTimeRising', firing: [{ labels: perLimiter(), value: p95, extras: { maxWait: `${maxWait}s` } }] },
        ...(withRateLimits
          ? [
              { atMinute: 25, alert: 'ProviderRateLimitedDespiteLimiter', firing: [] },
              { atMinute: 34, alert: 'ProviderRateLimitedDespiteLimiter', firing: [] },
              // 10 per minute over the 5m window.
              { atMinute: 45, alert: 'ProviderRateLimitedDespiteLimiter', firing: [{ labels: perLimiter(), value: '50' }] },
            ]
          : []),
      ],
    };
  };

  /** Door waits of decided requests, for each `le` given (admitted only: the sheds come later). */
  const doorHistogram = (labels: Labels, perLe: Record<string, string>): InputSeries[] => {
    const admitted = { ...labels, outcome: 'admitted' };
    return [
      ...Object.entries(perLe).map(([le, values]) => at(`${m.requestAdmission}_bucket`, { ...admitted, le }, values)),
      at(`${m.requestAdmission}_count`, admitted, perLe['+Inf']),
    ];
  };

  /** Door waits move at 10m from under 5 ms into (12, 20] s (p95 19.6 s, above 0.2 × a 60 s deadline); a quarter of the requests are shed from 14m. */
  const doorCase = (): AlertTestCase => {
    const gemini = replica('agent-1:8080');
    const steady = replica('agent-1:8080', 'steady');
    const [fast, lo, hi] = [admissionBound(0.005), admissionBound(12), admissionBound(20)];
    return {
      name: 'door waits rise at 10m and fire the door-wait warning before the sheds that start at 14m fire theirs; a limiter whose door wait stays under the line does not',
      series: [
        at(m.requestDeadline, gemini, '60x30'),
        at(m.requestDeadline, steady, '60x30'),
        ...doorHistogram(gemini, { [fast]: '0+60x10 600+0x20', [lo]: '0+60x10 600+0x20', [hi]: '0+60x30', '+Inf': '0+60x30' }),
        // Silent: every wait in (4, 8] s, p95 7.8 s, under the 12 s line.
        ...doorHistogram(steady, { [fast]: '0x30', [admissionBound(4)]: '0x30', [admissionBound(8)]: '0+60x30', '+Inf': '0+60x30' }),
        at(m.requests, { ...gemini, outcome: 'admitted' }, '0+60x30'),
        at(m.requests, { ...gemini, outcome: 'shed' }, '0x13 0+20x16'),
        at(m.requests, { ...steady, outcome: 'admitted' }, '0+60x30'),
      ],
      checks: [
        { atMinute: 9, alert: 'LimiterDoorWaitRising', firing: [] },
        { atMinute: 12, alert: 'LimiterDoorWaitRising', firing: [{ labels: perLimiter(), value: '19.6s', extras: { deadline: '1m 0s' } }] },
        { atMinute: 12, alert: 'LimiterRequestsShed', firing: [] },
        { atMinute: 25, alert: 'LimiterRequestsShed', firing: [{ labels: perLimiter(), value: '25%' }] },
      ],
    };
  };

  /**
   * Requests queue at the door from 10m and none is decided yet (the histogram records a wait
   * only when the request is admitted or shed): the oldest waiting request's gauge climbs 4 s a
   * minute and fires the warning once it passes 0.2 × the 60 s deadline, before any shed.
   */
  const queuedDoorCase = (): AlertTestCase => {
    const gemini = replica('agent-1:8080');
    return {
      name: 'requests waiting at the door and not yet decided fire the door-wait warning from the oldest wait, before any shed',
      series: [
        at(m.requestDeadline, gemini, '60x30'),
        at(m.doorOldestWait, gemini, '0x10 4+4x20'),
        at(m.requests, { ...gemini, outcome: 'admitted' }, '0x30'),
      ],
      checks: [
        { atMinute: 11, alert: 'LimiterDoorWaitRising', firing: [] },
        { atMinute: 15, alert: 'LimiterDoorWaitRising', firing: [{ labels: perLimiter(), value: '20s', extras: { deadline: '1m 0s' } }] },
        { atMinute: 14, alert: 'LimiterRequestsShed', firing: [] },
      ],
    };
  };

  /** 429s on series born at 1 (no sample before the first 429), as sparse 429s under a limiter are. */
  const firstRateLimitCase = (): AlertTestCase => {
    const gemini = replica('agent-1:8080');
    const calm = replica('agent-1:8080', 'calm');
    return {
      name: 'one 429 on a counter born at 1 at 5m fires within a minute, a second on another agent adds to it, and both resolve once older than the 5m window; a limiter with none does not',
      series: [
        // `_x5` is five missing samples (0m to 4m): born at 1 at 5m.
        at(m.rateLimited, reviewer(gemini), '_x5 1x14'),
        at(m.rateLimited, reviewer(gemini, { agent: 'synthesizer' }), '_x8 1x11'),
        at(m.rateLimited, reviewer(calm), '0x19'),
      ],
      checks: [
        { atMinute: 4, alert: 'ProviderRateLimitedDespiteLimiter', firing: [] },
        { atMinute: 6, alert: 'ProviderRateLimitedDespiteLimiter', firing: [{ labels: perLimiter(), value: '1' }] },
        { atMinute: 9, alert: 'ProviderRateLimitedDespiteLimiter', firing: [{ labels: perLimiter(), value: '2' }] },
        { atMinute: 14, alert: 'ProviderRateLimitedDespiteLimiter', firing: [] },
      ],
    };
  };

  const cases: AlertTestCase[] = [
    doorCase(),
    queuedDoorCase(),
    firstRateLimitCase(),
    risingCase(20, true),
    risingCase(5, false),
    {
      name: 'the same acquire times (p95 3.9 s) fire on a limiter with a maxWait of 5 s and stay silent on one with 20 s',
      series: ['short-wait', 'long-wait'].flatMap((limiter) => {
        const labels = replica('agent-1:8080', limiter);
        return [
          maxWaitGauge(labels, limiter === 'short-wait' ? 5 : 20, 40),
          ...acquireHistogram(reviewer(labels), { '0.005': '0+60x20 1200+0x20', '2': '0+60x20 1200+0x20', '4': '0+60x40', '+Inf': '0+60x40' }),
        ];
      }),
      checks: [
        { atMinute: 15, alert: 'LimiterAcquireTimeRising', firing: [] },
        {
          atMinute: 25,
          alert: 'LimiterAcquireTimeRising',
          firing: [{ labels: perLimiter('short-wait'), value: '3.9s', extras: { maxWait: '5s' } }],
        },
      ],
    },
    {
      name: 'a limiter shedding 25 % of its requests from 11m fires; one shedding 3 % does not',
      series: [
        at(m.requests, { ...replica('agent-1:8080'), outcome: 'admitted' }, '0+60x40'),
        at(m.requests, { ...replica('agent-1:8080'), outcome: 'shed' }, '0x10 0+20x30'),
        at(m.requests, { ...replica('agent-1:8080'), outcome: 'completed' }, '0+60x40'),
        at(m.requests, { ...replica('agent-1:8080', 'steady'), outcome: 'admitted' }, '0+60x40'),
        at(m.requests, { ...replica('agent-1:8080', 'steady'), outcome: 'shed' }, '0+2x40'),
      ],
      checks: [
        { atMinute: 10, alert: 'LimiterRequestsShed', firing: [] },
        { atMinute: 20, alert: 'LimiterRequestsShed', firing: [{ labels: perLimiter(), value: '25%' }] },
      ],
    },
    {
      name: 'a limiter without a maxWait gauge fires after 10m; one with it does not',
      series: [
        at(m.permitsLimit, replica('agent-1:8080'), '10x20'),
        maxWaitGauge(replica('agent-1:8080'), 20, 20),
        at(m.permitsLimit, replica('agent-1:8080', 'legacy'), '10x20'),
      ],
      checks: [
        { atMinute: 5, alert: 'LimiterMaxWaitMissing', firing: [] },
        { atMinute: 15, alert: 'LimiterMaxWaitMissing', firing: [{ labels: perLimiter('legacy'), value: '10' }] },
      ],
    },
    {
      name: 'budget timeouts from 11m fire; the permit reason that stays at zero does not',
      series: [
        at(m.timeouts, reviewer(replica('agent-1:8080'), { reason: 'budget' }), '0x10 0+6x20'),
        at(m.timeouts, reviewer(replica('agent-1:8080'), { reason: 'permit' }), '0x30'),
      ],
      checks: [
        { atMinute: 10, alert: 'LimiterTimeouts', firing: [] },
        { atMinute: 20, alert: 'LimiterTimeouts', firing: [{ labels: { ...perLimiter(), reason: 'budget' }, value: '0.1' }] },
      ],
    },
    {
      name: 'a replica with every permit in use fires after 5m; one at 90 % does not',
      series: [
        at(m.permitsInUse, replica('agent-1:8080'), '10x20'),
        at(m.permitsLimit, replica('agent-1:8080'), '10x20'),
        at(m.permitsInUse, replica('agent-2:8080'), '9x20'),
        at(m.permitsLimit, replica('agent-2:8080'), '10x20'),
      ],
      checks: [
        { atMinute: 4, alert: 'LimiterPermitsSaturated', firing: [] },
        { atMinute: 10, alert: 'LimiterPermitsSaturated', firing: [{ labels: perReplica('agent-1:8080'), value: '100%' }] },
      ],
    },
    {
      name: 'an empty budget fires "exhausted"; a negative one also fires "negative" after 10m; a healthy one neither',
      series: [
        at(m.budgetAvailable, replica('agent-1:8080'), '100x20'),
        at(m.budgetCapacity, replica('agent-1:8080'), '300000x20'),
        at(m.budgetAvailable, replica('agent-2:8080'), '200000x20'),
        at(m.budgetCapacity, replica('agent-2:8080'), '300000x20'),
        at(m.budgetAvailable, replica('agent-3:8080'), '-5000x20'),
        at(m.budgetCapacity, replica('agent-3:8080'), '300000x20'),
      ],
      checks: [
        { atMinute: 4, alert: 'LimiterBudgetExhausted', firing: [] },
        {
          atMinute: 6,
          alert: 'LimiterBudgetExhausted',
          firing: [
            { labels: perReplica('agent-1:8080'), value: '100' },
            { labels: perReplica('agent-3:8080'), value: '-5k' },
          ],
        },
        { atMinute: 9, alert: 'LimiterBudgetNegative', firing: [] },
        { atMinute: 15, alert: 'LimiterBudgetNegative', firing: [{ labels: perReplica('agent-3:8080'), value: '-5k' }] },
      ],
    },
    {
      name: 'agents using 140 % and 60 % of their reserved tokens fire with the suggested estimate once they made enough calls; an exact one and a rare one do not',
      series: [
        // 5000 tokens reserved per call, one call per minute each.
        ...['reviewer', 'synthesizer', 'classifier'].flatMap((agent) => [
          at(m.tokensReserved, { ...replica('agent-1:8080'), agent }, '0+5000x60'),
          at(`${m.acquireDuration}_count`, { ...replica('agent-1:8080'), agent, outcome: 'acquired' }, '0+1x60'),
        ]),
        at(m.tokensActual, { ...replica('agent-1:8080'), agent: 'reviewer' }, '0+7000x60'),
        at(m.tokensActual, { ...replica('agent-1:8080'), agent: 'synthesizer' }, '0+3000x60'),
        at(m.tokensActual, { ...replica('agent-1:8080'), agent: 'classifier' }, '0+5000x60'),
        // A call every 5 minutes, 140 % of its estimate: too few calls in the window to say.
        at(m.tokensReserved, { ...replica('agent-1:8080'), agent: 'rare' }, '0+1000x60'),
        at(`${m.acquireDuration}_count`, { ...replica('agent-1:8080'), agent: 'rare', outcome: 'acquired' }, '0+0.2x60'),
        at(m.tokensActual, { ...replica('agent-1:8080'), agent: 'rare' }, '0+1400x60'),
      ],
      checks: [
        { atMinute: 10, alert: 'LimiterTokenEstimateDrift', firing: [] },
        // Drifting from the start, but with fewer than estimateMinCalls calls until about minute 20: still pending.
        { atMinute: 30, alert: 'LimiterTokenEstimateDrift', firing: [] },
        {
          atMinute: 45,
          alert: 'LimiterTokenEstimateDrift',
          firing: [
            { labels: { ...perLimiter(), agent: 'reviewer' }, value: '140%', extras: { suggested: '7k' } },
            { labels: { ...perLimiter(), agent: 'synthesizer' }, value: '60%', extras: { suggested: '3k' } },
          ],
        },
      ],
    },
    {
      name: 'permits held while no admitted call finishes fire as a leak (timeouts do not count as calls); a busy replica does not',
      series: [
        at(m.permitsInUse, replica('agent-1:8080'), '2x30'),
        at(m.calls, reviewer(replica('agent-1:8080'), { outcome: 'ok' }), '100x30'),
        at(m.permitsInUse, replica('agent-2:8080'), '3x30'),
        at(m.calls, reviewer(replica('agent-2:8080'), { outcome: 'timeout' }), '0+5x30'),
        at(m.permitsInUse, replica('agent-3:8080'), '2x30'),
        at(m.calls, reviewer(replica('agent-3:8080'), { outcome: 'ok' }), '0+5x30'),
      ],
      checks: [
        { atMinute: 3, alert: 'LimiterPermitLeak', firing: [] },
        {
          atMinute: 20,
          alert: 'LimiterPermitLeak',
          // A raw gauge: the alert keeps every label of the series.
          firing: [
            { labels: replica('agent-1:8080'), value: '2' },
            { labels: replica('agent-2:8080'), value: '3' },
          ],
        },
      ],
    },
    {
      name: 'a reclaimed permit at 6m fires, and resolves once it is 10m old',
      series: [at(m.permitsReclaimed, replica('agent-1:8080'), '0x5 1+0x20'), at(m.permitsReclaimed, replica('agent-2:8080'), '0x25')],
      checks: [
        { atMinute: 5, alert: 'LimiterPermitsReclaimed', firing: [] },
        { atMinute: 10, alert: 'LimiterPermitsReclaimed', firing: [{ labels: perReplica('agent-1:8080'), value: '1' }] },
        { atMinute: 20, alert: 'LimiterPermitsReclaimed', firing: [] },
      ],
    },
    targetDownCase(config, scrape, at),
  ];
  return cases;
}

/** The agent target down fires; an agent target that is up, the mock provider and a job outside the selectors do not. */
function targetDownCase(
  config: DashboardsConfig,
  scrape: Labels,
  at: (metric: string, labels: Labels, values: string) => InputSeries,
): AlertTestCase {
  const down = { ...scrape, instance: 'agent-1:8080' };
  const series = [at('up', down, '1x5 0x10'), at('up', { ...scrape, instance: 'agent-2:8080' }, '1x15')];
  if (config.selectors.mockProvider !== null) {
    const mock = labelsSatisfying(parseMatchers(config.selectors.mockProvider), { job: jobs.mockProvider });
    series.push(at('up', { ...mock, instance: 'mock:8090' }, '1x15'));
  }
  const outside = labelsRejected(parseMatchers(config.selectors.agent), { ...scrape, instance: 'other:9100' });
  if (outside) series.push(at('up', outside, '0x15'));
  return {
    name: 'a scrape target down for 2m fires; one that is up, and one outside the selectors, do not',
    series,
    checks: [
      { atMinute: 6, alert: 'QuotascopeTargetDown', firing: [] },
      { atMinute: 10, alert: 'QuotascopeTargetDown', firing: [{ labels: down, value: '0' }] },
    ],
  };
}
