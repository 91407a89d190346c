// The promtool unit tests of the alerts, as data: for every alert a synthetic series that
// fires it and one that must stay silent. render/promtoolTests.ts turns these cases into
// the rules test file; the expected annotations are rendered from the alert specs
// themselves, with the expected values filled in.
import { jobs, limiter as m } from './config.ts';

export interface InputSeries {
  /** `metric{labels}` */
  readonly series: string;
  /** promtool expanding notation, one sample per minute: `0+60x20` = 0, 60, ... 21 samples. */
  readonly values: string;
}

export interface ExpectedAlert {
  /** The alert's labels, severity excluded (added from the spec). */
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

const job = `job="${jobs.agent}"`;
const replica = (instance: string, limiter = 'gemini') => `${job}, instance="${instance}", limiter="${limiter}"`;
const at = (metric: string, labels: string, values: string): InputSeries => ({ series: `${metric}{${labels}}`, values });
const labelsOf = (instance: string, limiter = 'gemini') => ({ job: jobs.agent, instance, limiter });

/** Acquire histogram with every admission in one bucket range, for each `le` given. */
function acquireHistogram(labels: string, perLe: Record<string, string>): InputSeries[] {
  const series = Object.entries(perLe).map(([le, values]) =>
    at(`${m.acquireDuration}_bucket`, `${labels}, outcome="acquired", le="${le}"`, values),
  );
  series.push(at(`${m.acquireDuration}_count`, `${labels}, outcome="acquired"`, perLe['+Inf']));
  return series;
}

export const alertTestCases: readonly AlertTestCase[] = [
  {
    name: 'acquire time rises at 20m and fires the early warning before the 429s that start at 35m',
    series: [
      // 60 admissions/min: all under 5 ms until 20m, then all between 4 s and 8 s.
      ...acquireHistogram(`${replica('agent-1:8080')}, agent="reviewer"`, {
        '0.005': '0+60x20 1200+0x40',
        '4': '0+60x20 1200+0x40',
        '8': '0+60x60',
        '+Inf': '0+60x60',
      }),
      // Silent: a limiter that has always waited 4-8 s is slow, not rising.
      ...acquireHistogram(`${replica('agent-1:8080', 'steady')}, agent="reviewer"`, {
        '0.005': '0x60',
        '4': '0x60',
        '8': '0+60x60',
        '+Inf': '0+60x60',
      }),
      // 429s from 36m on, 10 per minute.
      at(m.rateLimited, `${replica('agent-1:8080')}, agent="reviewer"`, '0x35 1+10x24'),
    ],
    checks: [
      { atMinute: 15, alert: 'LimiterAcquireTimeRising', firing: [] },
      {
        atMinute: 25,
        alert: 'LimiterAcquireTimeRising',
        firing: [{ labels: { job: jobs.agent, limiter: 'gemini' }, value: '7.8s' }],
      },
      { atMinute: 25, alert: 'ProviderRateLimitedDespiteLimiter', firing: [] },
      { atMinute: 34, alert: 'ProviderRateLimitedDespiteLimiter', firing: [] },
      {
        atMinute: 45,
        alert: 'ProviderRateLimitedDespiteLimiter',
        firing: [{ labels: { job: jobs.agent, limiter: 'gemini' }, value: '0.167' }],
      },
    ],
  },
  {
    name: 'budget timeouts from 11m fire; the permit reason that stays at zero does not',
    series: [
      at(m.timeouts, `${replica('agent-1:8080')}, agent="reviewer", reason="budget"`, '0x10 0+6x20'),
      at(m.timeouts, `${replica('agent-1:8080')}, agent="reviewer", reason="permit"`, '0x30'),
    ],
    checks: [
      { atMinute: 10, alert: 'LimiterTimeouts', firing: [] },
      {
        atMinute: 20,
        alert: 'LimiterTimeouts',
        firing: [{ labels: { job: jobs.agent, limiter: 'gemini', reason: 'budget' }, value: '0.1' }],
      },
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
      { atMinute: 10, alert: 'LimiterPermitsSaturated', firing: [{ labels: labelsOf('agent-1:8080'), value: '100%' }] },
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
          { labels: labelsOf('agent-1:8080'), value: '100' },
          { labels: labelsOf('agent-3:8080'), value: '-5k' },
        ],
      },
      { atMinute: 9, alert: 'LimiterBudgetNegative', firing: [] },
      { atMinute: 15, alert: 'LimiterBudgetNegative', firing: [{ labels: labelsOf('agent-3:8080'), value: '-5k' }] },
    ],
  },
  {
    name: 'agents using 140 % and 60 % of their reserved tokens fire with the suggested estimate; an exact one does not',
    series: [
      // 5000 tokens reserved per call, one call per minute each.
      ...['reviewer', 'synthesizer', 'classifier'].flatMap((agent) => [
        at(m.tokensReserved, `${replica('agent-1:8080')}, agent="${agent}"`, '0+5000x40'),
        at(`${m.acquireDuration}_count`, `${replica('agent-1:8080')}, agent="${agent}", outcome="acquired"`, '0+1x40'),
      ]),
      at(m.tokensActual, `${replica('agent-1:8080')}, agent="reviewer"`, '0+7000x40'),
      at(m.tokensActual, `${replica('agent-1:8080')}, agent="synthesizer"`, '0+3000x40'),
      at(m.tokensActual, `${replica('agent-1:8080')}, agent="classifier"`, '0+5000x40'),
    ],
    checks: [
      { atMinute: 10, alert: 'LimiterTokenEstimateDrift', firing: [] },
      {
        atMinute: 25,
        alert: 'LimiterTokenEstimateDrift',
        firing: [
          { labels: { job: jobs.agent, limiter: 'gemini', agent: 'reviewer' }, value: '140%', extras: { suggested: '7k' } },
          { labels: { job: jobs.agent, limiter: 'gemini', agent: 'synthesizer' }, value: '60%', extras: { suggested: '3k' } },
        ],
      },
    ],
  },
  {
    name: 'permits held while no admitted call finishes fire as a leak (timeouts do not count as calls); a busy replica does not',
    series: [
      at(m.permitsInUse, replica('agent-1:8080'), '2x30'),
      at(m.calls, `${replica('agent-1:8080')}, agent="reviewer", outcome="ok"`, '100x30'),
      at(m.permitsInUse, replica('agent-2:8080'), '3x30'),
      at(m.calls, `${replica('agent-2:8080')}, agent="reviewer", outcome="timeout"`, '0+5x30'),
      at(m.permitsInUse, replica('agent-3:8080'), '2x30'),
      at(m.calls, `${replica('agent-3:8080')}, agent="reviewer", outcome="ok"`, '0+5x30'),
    ],
    checks: [
      { atMinute: 3, alert: 'LimiterPermitLeak', firing: [] },
      {
        atMinute: 20,
        alert: 'LimiterPermitLeak',
        firing: [
          { labels: labelsOf('agent-1:8080'), value: '2' },
          { labels: labelsOf('agent-2:8080'), value: '3' },
        ],
      },
    ],
  },
  {
    name: 'a reclaimed permit at 6m fires, and resolves once it is 10m old',
    series: [
      at(m.permitsReclaimed, replica('agent-1:8080'), '0x5 1+0x20'),
      at(m.permitsReclaimed, replica('agent-2:8080'), '0x25'),
    ],
    checks: [
      { atMinute: 5, alert: 'LimiterPermitsReclaimed', firing: [] },
      { atMinute: 10, alert: 'LimiterPermitsReclaimed', firing: [{ labels: labelsOf('agent-1:8080'), value: '1' }] },
      { atMinute: 20, alert: 'LimiterPermitsReclaimed', firing: [] },
    ],
  },
  {
    name: 'a scrape target down for 2m fires; one that is up does not',
    series: [
      { series: `up{job="${jobs.agent}", instance="agent-1:8080"}`, values: '1x5 0x10' },
      { series: `up{job="${jobs.mockProvider}", instance="mock:8090"}`, values: '1x15' },
    ],
    checks: [
      { atMinute: 6, alert: 'QuotascopeTargetDown', firing: [] },
      {
        atMinute: 10,
        alert: 'QuotascopeTargetDown',
        firing: [{ labels: { job: jobs.agent, instance: 'agent-1:8080' }, value: '0' }],
      },
    ],
  },
];
