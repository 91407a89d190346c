// The alerts and recording rules, defined once per config. render/prometheus-rules.ts emits
// them as a Prometheus rule file (and a PrometheusRule), render/grafana-alerts.ts as
// Grafana-managed alert rules; the promtool unit tests (alert-tests.ts) prove each one fires
// and stays silent.
import type { AlertName } from './alert-names.ts';
import { type DashboardsConfig, type Severity, selectorsOf } from './config.ts';
import { limiter as m } from './metrics.ts';
import { quantile, series, sumIncrease, sumIncreaseFromBirth, sumOf, sumRate } from './promql.ts';
import { joinSelectors } from './selector.ts';

export interface RecordingRuleSpec {
  /** `level:metric:operations`. */
  readonly record: string;
  readonly expr: string;
}

/** How a value reads in an annotation. */
/** `rate` is a small per-second rate, printed plainly (humanize would write 166.7m). */
export type ValueFormat = 'number' | 'duration' | 'percent' | 'rate';

/** Renders annotation text for one alerting system (Prometheus or Grafana). */
export interface AnnotationTemplate {
  /** The alert expression's value. */
  value(format: ValueFormat): string;
  /** A label of the alert. */
  label(name: string): string;
  /** The value of one of the spec's `extras`, for the alert's label set. */
  extra(name: string, format: ValueFormat): string;
}

export interface AlertSpec {
  /** CamelCase alert name. */
  readonly name: AlertName;
  readonly severity: Severity;
  readonly for: string;
  /** PromQL that returns a series exactly while the alert condition holds. */
  readonly expr: string;
  /** One sentence without templates (mixtool's rule): what is wrong, for a notification's title. */
  readonly summary: string;
  /** The details, with the value and the labels. */
  readonly description: (t: AnnotationTemplate) => string;
  /** Extra values shown in the annotations: recorded metrics matched on `labels`. */
  readonly extras?: Readonly<Record<string, { readonly metric: string; readonly labels: readonly string[] }>>;
  /** The dashboard panel that shows it (Grafana links the rule to it). */
  readonly panel: { readonly dashboardUid: string; readonly key: string };
  /**
   * Series, one per thing the alert watches (a limiter, a replica, a target), present whenever
   * the metrics it reads are reported: Grafana tells "the condition is false" (Normal) from
   * "nothing is reported" (its no-data state) with it.
   */
  readonly present: string;
  /** What a Grafana-managed rule does when nothing it reads is reported, and why. */
  readonly noData: { readonly state: NoDataState; readonly why: string };
}

/** Grafana's no-data states: NoData (an alert saying the data is missing), Alerting (silence is danger), OK. */
export type NoDataState = 'NoData' | 'Alerting' | 'OK';

export type Records = ReturnType<typeof recordsOf>;

/** The recorded series' names (they carry the configured windows). */
export function recordsOf(config: DashboardsConfig) {
  const w = config.windows;
  return {
    acquireP95Short: `job_limiter:${m.acquireDuration}:p95_rate${w.acquireShort}`,
    acquireP95Baseline: `job_limiter:${m.acquireDuration}:p95_rate${w.acquireShort}_median${w.acquireBaseline}`,
    maxWait: `job_limiter:${m.maxWait}:max`,
    doorWaitP95Short: `job_limiter:${m.requestAdmission}:p95_rate${w.doorShort}`,
    doorOldestWait: `job_limiter:${m.doorOldestWait}:max`,
    requestDeadline: `job_limiter:${m.requestDeadline}:max`,
    permitUtilisation: 'job_instance_limiter:llm_limiter_permits:utilisation',
    timeoutsRate: `job_limiter_reason:${m.timeouts}:rate${w.rate}`,
    rateLimitedIncrease: `job_limiter:${m.rateLimited}:increase${w.rate}`,
    estimateRatio: `job_limiter_agent:llm_limiter_tokens_actual_per_reserved:ratio_rate${w.drift}`,
    actualTokensPerCall: `job_limiter_agent:llm_limiter_tokens_actual_per_call:rate${w.drift}`,
  } as const;
}

const agentKeys = ['job', 'limiter', 'agent'];
const replicaKeys = ['job', 'instance', 'limiter'];

export function buildRecordingRules(config: DashboardsConfig): RecordingRuleSpec[] {
  const records = recordsOf(config);
  const w = config.windows;
  const sel = selectorsOf(config).agentScrape;
  const acquired = joinSelectors(sel, 'outcome="acquired"');
  const doorDecided = joinSelectors(sel, 'outcome=~"admitted|shed"');
  return [
    {
      // Admitted calls only: a timed-out wait is maxWait by construction and is counted apart.
      // Only while calls are admitted: an idle limiter has no acquire time (not NaN).
      record: records.acquireP95Short,
      expr: `${quantile(0.95, m.acquireDuration, acquired, w.acquireShort, ['job', 'limiter'])}\nand\n${sumRate(`${m.acquireDuration}_count`, acquired, w.acquireShort, ['job', 'limiter'])} > 0`,
    },
    {
      // The typical short-window p95 of the recent past: what "rising" is measured against.
      record: records.acquireP95Baseline,
      expr: `quantile_over_time(0.5, ${records.acquireP95Short}[${w.acquireBaseline}])`,
    },
    {
      // The wait users feel at the door, of every request decided (admitted or shed): under
      // request admission the queueing happens here, not at the permit. Only while requests arrive.
      record: records.doorWaitP95Short,
      expr: `${quantile(0.95, m.requestAdmission, doorDecided, w.doorShort, ['job', 'limiter'])}\nand\n${sumRate(`${m.requestAdmission}_count`, doorDecided, w.doorShort, ['job', 'limiter'])} > 0`,
    },
    {
      // The oldest request waiting at the door now, of any replica: it rises while requests
      // queue, before any of them is decided (the histogram above records them only then).
      record: records.doorOldestWait,
      expr: `max by (job, limiter) (${series(m.doorOldestWait, sel)})`,
    },
    {
      // Each limiter's request deadline (replicas of a job share it; max if a rollout mixes two).
      record: records.requestDeadline,
      expr: `max by (job, limiter) (${series(m.requestDeadline, sel)})`,
    },
    {
      // Each limiter's own maxWait (replicas of a job share it; max if a rollout mixes two).
      record: records.maxWait,
      expr: `max by (job, limiter) (${series(m.maxWait, sel)})`,
    },
    {
      record: records.permitUtilisation,
      expr: `${sumOf(m.permitsInUse, sel, replicaKeys)} / ${sumOf(m.permitsLimit, sel, replicaKeys)}`,
    },
    { record: records.timeoutsRate, expr: sumRate(m.timeouts, sel, w.rate, ['job', 'limiter', 'reason']) },
    // The first 429 of a series counts (its counter is born at 1): see sumIncreaseFromBirth.
    { record: records.rateLimitedIncrease, expr: sumIncreaseFromBirth(m.rateLimited, sel, w.rate, ['job', 'limiter']) },
    {
      record: records.estimateRatio,
      expr: `${sumRate(m.tokensActual, sel, w.drift, agentKeys)} / ${sumRate(m.tokensReserved, sel, w.drift, agentKeys)}`,
    },
    {
      // Tokens per admitted call: what estimatedTokensPerCall should be.
      record: records.actualTokensPerCall,
      expr: `${sumRate(m.tokensActual, sel, w.drift, agentKeys)} / ${sumRate(`${m.acquireDuration}_count`, acquired, w.drift, agentKeys)}`,
    },
  ];
}

const limiterPanel = (key: string) => ({ dashboardUid: 'quotascope-limiter', key });

type AlertBody = Omit<AlertSpec, 'name' | 'severity' | 'for'>;

/** A guard of the quota: when nothing is reported it cannot see, and says so. */
const QUOTA_GUARD: AlertSpec['noData'] = {
  state: 'NoData',
  why: 'guards the quota: with no limiter metrics it cannot see, so it raises a no-data alert instead of reading as OK',
};

export function buildAlerts(config: DashboardsConfig): AlertSpec[] {
  const records = recordsOf(config);
  const { windows: w, thresholds: t } = config;
  const fors = config.alerts.for;
  const sel = selectorsOf(config);
  const warn = t.acquireWarnFractionOfMaxWait;
  const scrapes = [sel.agentScrape, ...(sel.mockScrape === null ? [] : [sel.mockScrape])];
  /** Every limiter the agents report, by (job, limiter); by replica too with `instance`. */
  const limiters = `${sumOf(m.permitsLimit, sel.agentScrape, ['job', 'limiter'])} * 0`;
  const replicas = `${sumOf(m.permitsLimit, sel.agentScrape, replicaKeys)} * 0`;
  /** Every limiter that admits whole requests (request admission reports its deadline). */
  const admittingLimiters = `${sumOf(m.requestDeadline, sel.agentScrape, ['job', 'limiter'])} * 0`;
  const doorWarn = t.doorWaitWarnFractionOfDeadline;
  const bodies: Record<AlertName, AlertBody> = {
    LimiterAcquireTimeRising: {
      expr: `${records.acquireP95Short} > on (job, limiter) ${warn} * ${records.maxWait}\nand\n${records.acquireP95Short} > ${t.acquireRiseFactor} * ${records.acquireP95Baseline}`,
      summary: 'Limiter acquire time is rising towards maxWait.',
      description: (x) =>
        `The ${w.acquireShort} p95 time to acquire a permit and budget of the admitted calls on limiter ${x.label('limiter')} (job ${x.label('job')}) is ${x.value('duration')}: above ${warn} × its maxWait of ${x.extra('maxWait', 'duration')} and ${t.acquireRiseFactor}× its median over the last ${w.acquireBaseline}. Demand is outgrowing the budget; timeouts and 429s come next.`,
      extras: { maxWait: { metric: records.maxWait, labels: ['job', 'limiter'] } },
      present: limiters,
      noData: QUOTA_GUARD,
      panel: limiterPanel('acquire-quantiles'),
    },
    LimiterDoorWaitRising: {
      expr: `${records.doorWaitP95Short} > on (job, limiter) ${doorWarn} * ${records.requestDeadline}\nor\n${records.doorOldestWait} > on (job, limiter) ${doorWarn} * ${records.requestDeadline}`,
      summary: 'User requests wait longer at the door: demand nears what the budget funds within the request deadline.',
      description: (x) =>
        `User requests wait at the door of limiter ${x.label('limiter')} (job ${x.label('job')}) ${x.value('duration')} (the ${w.doorShort} p95 of those admitted or shed, or the oldest one waiting now): above ${doorWarn} × its request deadline of ${x.extra('deadline', 'duration')}. Demand is outgrowing the budget; shed requests come next.`,
      extras: { deadline: { metric: records.requestDeadline, labels: ['job', 'limiter'] } },
      // Request admission reports its deadline per limiter: one series per limiter that admits whole requests.
      present: admittingLimiters,
      noData: {
        state: 'OK',
        why: 'reads the door wait of request admission: a limiter admitting call by call has no door, and the acquire-time alert watches its wait',
      },
      panel: limiterPanel('wait-door-vs-permit'),
    },
    LimiterRequestsShed: {
      // Raw series only (no recording rule), so Grafana-managed rules can load it alone. A
      // counter's first sample counts (a replica's first shed is born at 1, which rate() misses).
      expr: `${sumIncreaseFromBirth(m.requests, joinSelectors(sel.agentScrape, 'outcome="shed"'), w.rate, ['job', 'limiter'])}\n/\n${sumIncreaseFromBirth(m.requests, joinSelectors(sel.agentScrape, 'outcome=~"admitted|shed"'), w.rate, ['job', 'limiter'])}\n> ${t.requestShedFraction}`,
      summary: 'The limiter sheds user requests: demand exceeds what the budget funds within the request deadline.',
      description: (x) =>
        `Over ${w.rate}, limiter ${x.label('limiter')} (job ${x.label('job')}) shed ${x.value('percent')} of the user requests arriving (above ${t.requestShedFraction}): they were answered 429 at once, before any model call, because the budget could not fund them within the request deadline. Raise the quota or the budget, or lower the demand (the planner's fixes).`,
      present: admittingLimiters,
      noData: {
        state: 'OK',
        why: 'counts the requests request admission sheds: a limiter admitting call by call reports none, and the acquire-time and quota alerts guard its quota',
      },
      panel: limiterPanel('request-outcomes'),
    },
    LimiterMaxWaitMissing: {
      // Without its maxWait a limiter's acquire-time threshold is unknown: say so instead of staying silent.
      expr: `${sumOf(m.permitsLimit, sel.agentScrape, ['job', 'limiter'])}\nunless on (job, limiter)\n${records.maxWait}`,
      summary: 'A limiter exports no maxWait, so its acquire-time alert cannot fire.',
      description: (x) =>
        `Limiter ${x.label('limiter')} (job ${x.label('job')}) exports ${m.permitsLimit} but not ${m.maxWait}: LimiterAcquireTimeRising compares the acquire time with that gauge and stays silent for this limiter. Run a wrapper version that exports it.`,
      present: limiters,
      noData: QUOTA_GUARD,
      panel: limiterPanel('acquire-quantiles'),
    },
    LimiterTimeouts: {
      expr: `${records.timeoutsRate} > 0`,
      summary: 'Limiter calls are refused admission: maxWait expired, or the wait queue was full.',
      description: (x) =>
        `${x.value('rate')} calls/s on limiter ${x.label('limiter')} (job ${x.label('job')}) were refused admission, reason ${x.label('reason')} (permit, budget: maxWait expired waiting for it; queue_full: maxWaiting calls were already waiting). Those model calls never ran: branches go missing.`,
      present: limiters,
      noData: QUOTA_GUARD,
      panel: limiterPanel('timeouts'),
    },
    ProviderRateLimitedDespiteLimiter: {
      expr: `${records.rateLimitedIncrease} > 0`,
      summary: 'The provider answers 429 although the limiter should keep within the quota.',
      description: (x) =>
        `The provider rate-limited ${x.value('number')} calls in the last ${w.rate} from limiter ${x.label('limiter')} (job ${x.label('job')}) although the limiter should keep the fleet within the quota. The budget or replica share is set above the real quota.`,
      present: limiters,
      noData: QUOTA_GUARD,
      panel: limiterPanel('rate-limited'),
    },
    LimiterPermitsSaturated: {
      expr: `${records.permitUtilisation} >= ${t.permitSaturation}`,
      summary: 'Every permit of a limiter replica is in use.',
      description: (x) =>
        `Permits in use / limit on ${x.label('instance')} (limiter ${x.label('limiter')}) is ${x.value('percent')} for ${fors.LimiterPermitsSaturated}: calls queue for permits.`,
      present: replicas,
      noData: QUOTA_GUARD,
      panel: limiterPanel('permit-utilisation'),
    },
    LimiterBudgetExhausted: {
      expr: `${sumOf(m.budgetAvailable, sel.agentScrape, replicaKeys)}\n< ${t.budgetExhaustedFractionOfCapacity} * ${sumOf(m.budgetCapacity, sel.agentScrape, replicaKeys)}`,
      summary: 'The token budget of a limiter replica is exhausted.',
      description: (x) =>
        `Only ${x.value('number')} tokens are left in the budget of limiter ${x.label('limiter')} on ${x.label('instance')} (below ${t.budgetExhaustedFractionOfCapacity} × its capacity) for ${fors.LimiterBudgetExhausted}: calls wait for budget.`,
      present: `${sumOf(m.budgetCapacity, sel.agentScrape, replicaKeys)} * 0`,
      noData: QUOTA_GUARD,
      panel: limiterPanel('budget-level'),
    },
    LimiterBudgetNegative: {
      expr: `${sumOf(m.budgetAvailable, sel.agentScrape, replicaKeys)} < 0`,
      summary: 'The token budget of a limiter replica stays negative.',
      description: (x) =>
        `The budget of limiter ${x.label('limiter')} on ${x.label('instance')} is ${x.value('number')} tokens and has been negative for ${fors.LimiterBudgetNegative}: calls use more tokens than reserved; see LimiterTokenEstimateDrift.`,
      present: `${sumOf(m.budgetCapacity, sel.agentScrape, replicaKeys)} * 0`,
      noData: QUOTA_GUARD,
      panel: limiterPanel('budget-level'),
    },
    LimiterTokenEstimateDrift: {
      // Only agents with enough admitted calls in the window: a handful of calls proves nothing.
      expr: `(\n${records.estimateRatio} < ${t.estimateBand.low}\nor\n${records.estimateRatio} > ${t.estimateBand.high}\n)\nand on (job, limiter, agent)\n${sumIncrease(`${m.acquireDuration}_count`, joinSelectors(sel.agentScrape, 'outcome="acquired"'), w.drift, agentKeys)} >= ${t.estimateMinCalls}`,
      summary: `The token estimate (${config.countedTokens} tokens) of an agent is off.`,
      description: (x) =>
        `Over ${w.drift} (at least ${t.estimateMinCalls} admitted calls), agent ${x.label('agent')} on limiter ${x.label('limiter')} used ${x.value('percent')} of the ${config.countedTokens} tokens it reserved (band ${t.estimateBand.low}–${t.estimateBand.high}). Suggested estimate: ${x.extra('suggested', 'number')} ${config.countedTokens} tokens per call.`,
      extras: { suggested: { metric: records.actualTokensPerCall, labels: agentKeys } },
      present: limiters,
      noData: QUOTA_GUARD,
      panel: limiterPanel('estimate-accuracy'),
    },
    LimiterPermitLeak: {
      expr: `min_over_time(${series(m.permitsInUse, sel.agentScrape)}[${w.leak}]) > 0\nunless on (job, instance, limiter)\nsum by (job, instance, limiter) (increase(${series(m.calls, joinSelectors(sel.agentScrape, 'outcome!="timeout"'))}[${w.leak}])) > 0`,
      summary: 'A limiter holds permits while no call finishes.',
      description: (x) =>
        `${x.value('number')} permits have been held on ${x.label('instance')} (limiter ${x.label('limiter')}) for ${w.leak} while no admitted call finished: a permit leak.`,
      present: replicas,
      noData: { state: 'OK', why: 'watches permits, not the quota: no limiter reported means no permit to leak (the quota alerts and QuotascopeTargetDown say the metrics are missing)' },
      panel: limiterPanel('littles-law'),
    },
    LimiterPermitsReclaimed: {
      expr: `sum by (job, instance, limiter) (increase(${series(m.permitsReclaimed, sel.agentScrape)}[${w.leak}])) > 0`,
      summary: 'A limiter reclaimed permits from calls held past the maximum call time.',
      description: (x) =>
        `${x.value('number')} permits were reclaimed on ${x.label('instance')} (limiter ${x.label('limiter')}) in ${w.leak}: calls held them past the maximum call time.`,
      present: replicas,
      noData: { state: 'OK', why: 'watches permits, not the quota: no limiter reported means none reclaimed (the quota alerts and QuotascopeTargetDown say the metrics are missing)' },
      panel: limiterPanel('permits-reclaimed'),
    },
    QuotascopeTargetDown: {
      expr: scrapes.map((s) => `${series('up', s)} == 0`).join('\nor\n'),
      summary: 'Prometheus cannot scrape a target the limiter alerts depend on.',
      description: (x) =>
        `Prometheus cannot scrape ${x.label('instance')} of job ${x.label('job')}: its limiter metrics and alerts are blind.`,
      present: scrapes.map((s) => `${series('up', s)} * 0`).join('\nor\n'),
      noData: { state: 'Alerting', why: 'silence means danger: no `up` series at all means Prometheus lost every target it should scrape, and every other alert is blind' },
      panel: limiterPanel('permits'),
    },
  };
  return (Object.entries(bodies) as [AlertName, AlertBody][]).map(([name, body]) => ({
    name,
    severity: config.alerts.severity[name],
    for: fors[name],
    ...body,
  }));
}
