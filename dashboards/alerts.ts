// The alerts and recording rules, defined once. render/prometheusRules.ts emits them as a
// Prometheus rule file and render/grafanaAlerts.ts as Grafana-managed alert rules; the
// promtool unit tests (alertTests.ts) prove each one fires and stays silent.
import { acquireWarnSeconds, forDurations, jobs, limiter as m, thresholds, windows } from './config.ts';
import { quantile, series, sumOf, sumRate } from './promql.ts';

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
  readonly name: string;
  readonly severity: 'warning' | 'critical';
  readonly for: string;
  /** PromQL that returns a series exactly while the alert condition holds. */
  readonly expr: string;
  readonly summary: (t: AnnotationTemplate) => string;
  readonly description: (t: AnnotationTemplate) => string;
  /** Extra values shown in the annotations: recorded metrics matched on `labels`. */
  readonly extras?: Readonly<Record<string, { readonly metric: string; readonly labels: readonly string[] }>>;
  /** The dashboard panel that shows it (Grafana links the rule to it). */
  readonly panel: { readonly dashboardUid: string; readonly key: string };
}

export const records = {
  acquireP95Short: `job_limiter:${m.acquireDuration}:p95_rate${windows.acquireShort}`,
  acquireP95Baseline: `job_limiter:${m.acquireDuration}:p95_rate${windows.acquireShort}_median${windows.acquireBaseline}`,
  permitUtilisation: 'job_instance_limiter:llm_limiter_permits:utilisation',
  timeoutsRate: `job_limiter_reason:${m.timeouts}:rate${windows.rate}`,
  rateLimitedRate: `job_limiter:${m.rateLimited}:rate${windows.rate}`,
  estimateRatio: `job_limiter_agent:llm_limiter_tokens_actual_per_reserved:ratio_rate${windows.drift}`,
  actualTokensPerCall: `job_limiter_agent:llm_limiter_tokens_actual_per_call:rate${windows.drift}`,
} as const;

const agentKeys = ['job', 'limiter', 'agent'];
const replicaKeys = ['job', 'instance', 'limiter'];

export const recordingRules: readonly RecordingRuleSpec[] = [
  {
    // Only while calls are admitted: an idle limiter has no acquire time (not NaN).
    record: records.acquireP95Short,
    expr: `${quantile(0.95, m.acquireDuration, '', windows.acquireShort, ['job', 'limiter'])}\nand\n${sumRate(`${m.acquireDuration}_count`, '', windows.acquireShort, ['job', 'limiter'])} > 0`,
  },
  {
    // The typical short-window p95 of the recent past: what "rising" is measured against.
    record: records.acquireP95Baseline,
    expr: `quantile_over_time(0.5, ${records.acquireP95Short}[${windows.acquireBaseline}])`,
  },
  {
    record: records.permitUtilisation,
    expr: `${sumOf(m.permitsInUse, '', replicaKeys)} / ${sumOf(m.permitsLimit, '', replicaKeys)}`,
  },
  { record: records.timeoutsRate, expr: sumRate(m.timeouts, '', windows.rate, ['job', 'limiter', 'reason']) },
  { record: records.rateLimitedRate, expr: sumRate(m.rateLimited, '', windows.rate, ['job', 'limiter']) },
  {
    record: records.estimateRatio,
    expr: `${sumRate(m.tokensActual, '', windows.drift, agentKeys)} / ${sumRate(m.tokensReserved, '', windows.drift, agentKeys)}`,
  },
  {
    // Tokens per admitted call: what estimatedTokensPerCall should be.
    record: records.actualTokensPerCall,
    expr: `${sumRate(m.tokensActual, '', windows.drift, agentKeys)} / ${sumRate(`${m.acquireDuration}_count`, 'outcome="acquired"', windows.drift, agentKeys)}`,
  },
];

const limiterPanel = (key: string) => ({ dashboardUid: 'quotascope-limiter', key });

export const alerts: readonly AlertSpec[] = [
  {
    name: 'LimiterAcquireTimeRising',
    severity: 'warning',
    for: forDurations.acquireRising,
    expr: `${records.acquireP95Short} > ${acquireWarnSeconds}\nand\n${records.acquireP95Short} > ${thresholds.acquireRiseFactor} * ${records.acquireP95Baseline}`,
    summary: (t) => `Acquire time of limiter ${t.label('limiter')} is rising (p95 ${t.value('duration')})`,
    description: (t) =>
      `The ${windows.acquireShort} p95 time to acquire a permit and budget on limiter ${t.label('limiter')} (job ${t.label('job')}) is ${t.value('duration')}: above ${acquireWarnSeconds}s (${thresholds.acquireFractionOfMaxWait} × maxWait) and ${thresholds.acquireRiseFactor}× its median over the last ${windows.acquireBaseline}. Demand is outgrowing the budget; timeouts and 429s come next.`,
    panel: limiterPanel('acquire-quantiles'),
  },
  {
    name: 'LimiterTimeouts',
    severity: 'warning',
    for: forDurations.timeouts,
    expr: `${records.timeoutsRate} > 0`,
    summary: (t) => `Limiter ${t.label('limiter')} is timing out calls waiting for ${t.label('reason')}`,
    description: (t) =>
      `${t.value('rate')} calls/s on limiter ${t.label('limiter')} (job ${t.label('job')}) gave up after maxWait waiting for ${t.label('reason')}. Those model calls never ran: branches go missing.`,
    panel: limiterPanel('timeouts'),
  },
  {
    name: 'ProviderRateLimitedDespiteLimiter',
    severity: 'critical',
    for: forDurations.rateLimited,
    expr: `${records.rateLimitedRate} > 0`,
    summary: (t) => `Provider answers 429 to limiter ${t.label('limiter')}`,
    description: (t) =>
      `The provider rate-limited ${t.value('rate')} calls/s from limiter ${t.label('limiter')} (job ${t.label('job')}) although the limiter should keep the fleet within the quota. The budget or replica share is set above the real quota.`,
    panel: limiterPanel('rate-limited'),
  },
  {
    name: 'LimiterPermitsSaturated',
    severity: 'warning',
    for: forDurations.permitsSaturated,
    expr: `${records.permitUtilisation} >= ${thresholds.permitSaturation}`,
    summary: (t) => `Limiter ${t.label('limiter')} on ${t.label('instance')} has every permit in use`,
    description: (t) =>
      `Permits in use / limit on ${t.label('instance')} (limiter ${t.label('limiter')}) is ${t.value('percent')} for ${forDurations.permitsSaturated}: calls queue for permits.`,
    panel: limiterPanel('permit-utilisation'),
  },
  {
    name: 'LimiterBudgetExhausted',
    severity: 'warning',
    for: forDurations.budgetExhausted,
    expr: `${sumOf(m.budgetAvailable, '', replicaKeys)}\n< ${thresholds.budgetExhaustedFraction} * ${sumOf(m.budgetCapacity, '', replicaKeys)}`,
    summary: (t) => `Token budget of limiter ${t.label('limiter')} on ${t.label('instance')} is exhausted`,
    description: (t) =>
      `Only ${t.value('number')} tokens are left in the budget of limiter ${t.label('limiter')} on ${t.label('instance')} (below ${thresholds.budgetExhaustedFraction * 100} % of capacity) for ${forDurations.budgetExhausted}: calls wait for budget.`,
    panel: limiterPanel('budget-level'),
  },
  {
    name: 'LimiterBudgetNegative',
    severity: 'warning',
    for: forDurations.budgetNegative,
    expr: `${sumOf(m.budgetAvailable, '', replicaKeys)} < 0`,
    summary: (t) => `Token budget of limiter ${t.label('limiter')} on ${t.label('instance')} stays negative`,
    description: (t) =>
      `The budget of limiter ${t.label('limiter')} on ${t.label('instance')} is ${t.value('number')} tokens and has been negative for ${forDurations.budgetNegative}: calls use more tokens than reserved; see LimiterTokenEstimateDrift.`,
    panel: limiterPanel('budget-level'),
  },
  {
    name: 'LimiterTokenEstimateDrift',
    severity: 'warning',
    for: forDurations.estimateDrift,
    expr: `${records.estimateRatio} < ${thresholds.estimateBand.low}\nor\n${records.estimateRatio} > ${thresholds.estimateBand.high}`,
    summary: (t) => `Token estimate of agent ${t.label('agent')} is off (actual/reserved ${t.value('percent')})`,
    description: (t) =>
      `Over ${windows.drift}, agent ${t.label('agent')} on limiter ${t.label('limiter')} used ${t.value('percent')} of the tokens it reserved (band ${thresholds.estimateBand.low}–${thresholds.estimateBand.high}). Suggested estimate: ${t.extra('suggested', 'number')} tokens per call.`,
    extras: { suggested: { metric: records.actualTokensPerCall, labels: agentKeys } },
    panel: limiterPanel('estimate-accuracy'),
  },
  {
    name: 'LimiterPermitLeak',
    severity: 'critical',
    for: forDurations.permitLeak,
    expr: `min_over_time(${series(m.permitsInUse)}[${windows.leak}]) > 0\nunless on (job, instance, limiter)\n${`sum by (job, instance, limiter) (increase(${series(m.calls, 'outcome!="timeout"')}[${windows.leak}]))`} > 0`,
    summary: (t) => `Limiter ${t.label('limiter')} on ${t.label('instance')} holds permits with no calls running`,
    description: (t) =>
      `${t.value('number')} permits have been held on ${t.label('instance')} (limiter ${t.label('limiter')}) for ${windows.leak} while no admitted call finished: a permit leak.`,
    panel: limiterPanel('littles-law'),
  },
  {
    name: 'LimiterPermitsReclaimed',
    severity: 'warning',
    for: forDurations.permitsReclaimed,
    expr: `sum by (job, instance, limiter) (increase(${series(m.permitsReclaimed)}[${windows.leak}])) > 0`,
    summary: (t) => `Limiter ${t.label('limiter')} on ${t.label('instance')} reclaimed leaked permits`,
    description: (t) =>
      `${t.value('number')} permits were reclaimed on ${t.label('instance')} (limiter ${t.label('limiter')}) in ${windows.leak}: calls held them past the maximum call time.`,
    panel: limiterPanel('permits-reclaimed'),
  },
  {
    name: 'QuotascopeTargetDown',
    severity: 'critical',
    for: forDurations.targetDown,
    expr: `up{job=~"${jobs.agent}|${jobs.mockProvider}"} == 0`,
    summary: (t) => `${t.label('job')} target ${t.label('instance')} is down`,
    description: (t) =>
      `Prometheus cannot scrape ${t.label('instance')} of job ${t.label('job')}: its limiter metrics and alerts are blind.`,
    panel: limiterPanel('permits'),
  },
];
