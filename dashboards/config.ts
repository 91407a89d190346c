// The one config module of the dashboards and alerts (kubernetes-mixin style): every
// selector, threshold, window, `for` duration, severity, label and Grafana/Kubernetes
// identity they use, with its default and its bound. `quotascope dashboards --config FILE`
// reads a YAML or JSON file of this shape; an empty file gives the defaults, which are what
// quotascope's own stack (npm start, docker compose) scrapes and provisions.
import { z } from 'zod';
import { COUNTED_TOKEN_KINDS } from '../instrumentation/counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS } from '../instrumentation/defaults.ts';
import { type AlertName, alertNames } from './alert-names.ts';
import { formatMatchers, joinSelectors, labelsSatisfying, type Matcher, parseMatchers, selectsSomething } from './selector.ts';

/** The metric names live in metrics.ts; re-exported for the modules that import them from here (loadtest/report). */
export { agent, k6, limiter, mock } from './metrics.ts';

/** Scrape job names of quotascope's own stack (deploy/prometheus/prometheus.yml, loadtest/prometheus.ts). */
export const jobs = {
  agent: 'quotascope-agent',
  mockProvider: 'quotascope-mock-provider',
} as const;

export type Severity = 'critical' | 'warning' | 'info';

/** Default severity per alert: critical pages, warning makes a ticket. */
const defaultSeverities: Record<AlertName, Severity> = {
  LimiterAcquireTimeRising: 'warning',
  LimiterDoorWaitRising: 'warning',
  LimiterRequestsShed: 'warning',
  LimiterMaxWaitMissing: 'warning',
  LimiterTimeouts: 'warning',
  ProviderRateLimitedDespiteLimiter: 'critical',
  LimiterPermitsSaturated: 'warning',
  LimiterBudgetExhausted: 'warning',
  LimiterBudgetNegative: 'warning',
  LimiterTokenEstimateDrift: 'warning',
  LimiterPermitLeak: 'critical',
  LimiterPermitsReclaimed: 'warning',
  QuotascopeTargetDown: 'critical',
};

/** Default `for` per alert: long enough to ride out a blip. */
const defaultForDurations: Record<AlertName, string> = {
  LimiterAcquireTimeRising: '1m',
  // Short: in the default run the door wait crosses its line about 30 s before the first shed.
  LimiterDoorWaitRising: '15s',
  LimiterRequestsShed: '1m',
  LimiterMaxWaitMissing: '10m',
  LimiterTimeouts: '1m',
  // Short: one 429 under a limiter is already the fault; the rule counts it for a whole rate window.
  ProviderRateLimitedDespiteLimiter: '15s',
  LimiterPermitsSaturated: '5m',
  LimiterBudgetExhausted: '5m',
  LimiterBudgetNegative: '10m',
  LimiterTokenEstimateDrift: '15m',
  LimiterPermitLeak: '5m',
  LimiterPermitsReclaimed: '1m',
  QuotascopeTargetDown: '2m',
};

const durationUnits: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Seconds in a Prometheus duration such as `1m30s`; undefined when it is not one. */
export function durationSeconds(text: string): number | undefined {
  if (!/^(\d+(ms|s|m|h|d|w))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|s|m|h|d|w)/g)) total += Number(n) * durationUnits[unit];
  return total;
}

/** A Prometheus duration between `min` and `max` seconds. */
function duration(minSeconds: number, maxSeconds: number) {
  return z.string().superRefine((text, ctx) => {
    const seconds = durationSeconds(text);
    if (seconds === undefined) ctx.addIssue({ code: 'custom', message: `"${text}" is not a Prometheus duration such as 30s, 5m or 1h30m` });
    else if (seconds < minSeconds || seconds > maxSeconds) {
      ctx.addIssue({ code: 'custom', message: `${text} is outside ${minSeconds}s to ${maxSeconds}s` });
    }
  });
}

/**
 * A PromQL matcher list, parsed with PromQL's grammar and written back in one canonical form
 * (`label="value", ...`), so nothing but label matchers reaches a rule. `required` ones must
 * select something (Prometheus refuses all-empty matchers) and, for the generated promtool
 * tests, let a value be found that each matcher accepts (`job` falls back to `testJob`).
 */
function selector(required: boolean, testJob?: string) {
  return z
    .string()
    .max(1000)
    .transform((text, ctx) => {
      if (text.includes('`')) {
        ctx.addIssue({ code: 'custom', message: 'backticks are not allowed (use double-quoted values)' });
        return z.NEVER;
      }
      let matchers: Matcher[];
      try {
        matchers = parseMatchers(text);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
      const problem = matcherProblem(matchers, required, testJob);
      if (problem) {
        ctx.addIssue({ code: 'custom', message: problem });
        return z.NEVER;
      }
      return formatMatchers(matchers);
    });
}

/** What is wrong with parsed matchers for a selector of the config, or undefined. */
function matcherProblem(matchers: readonly Matcher[], required: boolean, testJob: string | undefined): string | undefined {
  for (const m of matchers) {
    if (!PROMETHEUS_LABEL_NAME.test(m.label)) return `label name "${m.label}": letters, digits and _ only, not starting with a digit`;
    if (m.label.startsWith('__')) return `label ${m.label}: names starting with __ are reserved (the rules name the metric themselves)`;
    if (!m.value.isWellFormed()) return `${m.label}: the value has an unpaired surrogate`;
    if ((m.op === '=~' || m.op === '!~') && RE2_UNSUPPORTED.test(m.value)) {
      return `${m.label}${m.op}"${m.value}": lookarounds and backreferences are not in Prometheus' regular expressions (RE2)`;
    }
  }
  if (!required) return undefined;
  if (!selectsSomething(matchers)) return 'needs at least one matcher that does not match the empty string, e.g. job="my-agents"';
  try {
    labelsSatisfying(matchers, testJob === undefined ? {} : { job: testJob });
  } catch (error) {
    return `${(error as Error).message}; the generated promtool tests need one (use = or a regex of literal alternatives such as "a|b")`;
  }
  return undefined;
}

const PROMETHEUS_LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** JavaScript regex syntax RE2 (Prometheus) refuses: lookarounds and backreferences. */
const RE2_UNSUPPORTED = /\(\?<?[=!]|\\[1-9]|\\k</;

/**
 * Text used literally in alert labels and annotations: Prometheus and Grafana expand Go
 * templates there, and Grafana's provisioning expands $VAR, so neither syntax may appear.
 */
const literalText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((text) => !/\{\{|\}\}|\$/.test(text), 'template syntax ({{, }}) and $ are not allowed: the value is used literally in the generated rules')
    .refine((text) => !/[\p{Cc}\p{Zl}\p{Zp}]/u.test(text), 'control characters and line breaks are not allowed')
    .refine((text) => text.isWellFormed(), 'the text has an unpaired surrogate');

const labelName = z
  .string()
  .regex(PROMETHEUS_LABEL_NAME, 'a Prometheus label name: letters, digits and _, not starting with a digit')
  .refine((name) => !name.startsWith('__'), 'names starting with __ are reserved');
const fraction = (max: number) => z.number().gt(0).lte(max);
const k8sName = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a Kubernetes name: lower-case letters, digits and -');
const k8sLabels = z
  .record(z.string().regex(/^([a-z0-9.-]{1,253}\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'a Kubernetes label key'), z.string().max(63))
  .refine((labels) => Object.keys(labels).length <= 20, 'at most 20 labels');

export const dashboardsConfigSchema = z.strictObject({
  /**
   * The tokens the limiters' budgets count, as the provider quota does (the agent's
   * --counted-tokens): every llm_limiter_tokens_* figure is in that unit, so the token panels
   * and the estimate-drift alert name it.
   */
  countedTokens: z.enum(COUNTED_TOKEN_KINDS).default(DEFAULT_COUNTED_TOKENS),
  /**
   * Label matchers added to every query, variable and rule, by what is scraped. The dashboards'
   * job and instance variables list their values from these.
   */
  selectors: z
    .strictObject({
      /** The agent service (limiter and agent_* metrics). */
      agent: selector(true, jobs.agent).default(`job="${jobs.agent}"`),
      /** The mock provider; null when the stack has none (its dashboard and target-down check are left out). */
      mockProvider: selector(true, jobs.mockProvider).nullable().default(`job="${jobs.mockProvider}"`),
      /** k6 remote-write series (they carry k6's tags, no job). */
      k6: selector(false).default(''),
    })
    .prefault({}),
  /** The Prometheus datasource Grafana queries (dashboards pick it through their datasource variable). */
  datasource: z
    .strictObject({
      uid: z.string().regex(/^[a-zA-Z0-9_-]{1,40}$/, 'a Grafana uid: 1-40 letters, digits, - and _').default('quotascope-prometheus'),
      name: z.string().min(1).max(190).default('Prometheus'),
      url: z.url().max(2000).default('http://prometheus:9090'),
      /** The scrape interval; Grafana derives $__rate_interval from it. */
      scrapeInterval: duration(1, 3600).default('5s'),
    })
    .prefault({}),
  grafana: z
    .strictObject({
      folderTitle: z.string().min(1).max(190).default('quotascope'),
      folderUid: z.string().regex(/^[a-zA-Z0-9_-]{1,40}$/, 'a Grafana uid: 1-40 letters, digits, - and _').default('quotascope'),
      /** Where the dashboard provider reads the dashboard JSON inside the Grafana container. */
      dashboardsPath: z.string().startsWith('/').max(500).default('/var/lib/grafana/dashboards'),
    })
    .prefault({}),
  /** Alert thresholds, relative to each limiter's own maxWait and budget capacity; panels draw the same lines. */
  thresholds: z
    .strictObject({
      /** Acquire p95 (admitted calls) above this fraction of the limiter's maxWait is worth a look... */
      acquireWarnFractionOfMaxWait: fraction(1).default(0.25),
      /** ...when it is also this many times its own recent baseline. */
      acquireRiseFactor: z.number().gte(1).lte(100).default(1.5),
      /** Door wait p95 (admitted and shed requests) above this fraction of the limiter's request deadline: demand nears what the budget funds in time, before the first shed. */
      doorWaitWarnFractionOfDeadline: fraction(1).default(0.2),
      /** Shed requests above this fraction of the arriving ones (admitted + shed) means demand outgrows the budget. */
      requestShedFraction: fraction(1).default(0.05),
      /** Permits in use / limit at or above this is saturated. */
      permitSaturation: fraction(1).default(1),
      /** Budget below this fraction of the limiter's capacity is exhausted. */
      budgetExhaustedFractionOfCapacity: fraction(1).default(0.05),
      /** actual/reserved tokens outside [low, high] means the estimate drifted. */
      estimateBand: z
        .strictObject({ low: fraction(1).default(0.8), high: z.number().gte(1).lte(10).default(1.2) })
        .prefault({}),
      /** Admitted calls of an agent within the drift window before its estimate drift may pend: a few calls prove nothing. */
      estimateMinCalls: z.int().min(1).max(1_000_000).default(20),
    })
    .prefault({}),
  /** Fixed windows of the recording and alerting rules (panels use $__rate_interval). */
  windows: z
    .strictObject({
      /** The short window of the acquire-time early warning. */
      acquireShort: duration(60, 3600).default('2m'),
      /** The baseline of the short-window p95: its median over this window. */
      acquireBaseline: duration(300, 86_400).default('30m'),
      /** The window of the door-wait early warning: short, so it leads the first shed. */
      doorShort: duration(30, 3600).default('1m'),
      /** Rates of timeouts, 429s and finished calls. */
      rate: duration(60, 3600).default('5m'),
      /** Token estimate drift: long enough to average many calls. */
      drift: duration(300, 86_400).default('30m'),
      /** A permit held this long with no finished call is a leak. */
      leak: duration(60, 86_400).default('10m'),
    })
    .prefault({}),
  alerts: z
    .strictObject({
      /** Severity label per alert name (mixtool's lint allows critical, warning and info). */
      severity: z.partialRecord(z.enum(alertNames), z.enum(['critical', 'warning', 'info'])).default({}),
      /** `for` per alert name. */
      for: z.partialRecord(z.enum(alertNames), duration(0, 86_400)).default({}),
      /** Labels added to every alert (team, service, ...). */
      labels: z
        .record(labelName.refine((n) => n !== 'severity' && n !== 'alertname', 'severity and alertname are set per alert'), literalText(200))
        .refine((labels) => Object.keys(labels).length <= 20, 'at most 20 labels')
        .default({}),
      /** Runbook links are this base + `#<alert name in lower case>`. */
      runbookUrlBase: literalText(2000).pipe(z.string().min(1)).default('dashboards/README.md'),
    })
    .prefault({}),
  /** Metadata of the Kubernetes outputs (PrometheusRule, dashboard ConfigMaps). */
  kubernetes: z
    .strictObject({
      /** Namespace of every object; left out when absent (kubectl -n decides). */
      namespace: k8sName.optional(),
      /** Object name prefix. */
      namePrefix: k8sName.max(40).default('quotascope'),
      /** Labels on every object, e.g. the `release` label a Prometheus Operator's ruleSelector matches. */
      labels: k8sLabels.default({}),
    })
    .prefault({}),
});

export type DashboardsConfigInput = z.input<typeof dashboardsConfigSchema>;
type ParsedConfig = z.output<typeof dashboardsConfigSchema>;

/** The config with every per-alert setting filled in. */
export interface DashboardsConfig extends Omit<ParsedConfig, 'alerts'> {
  readonly alerts: Omit<ParsedConfig['alerts'], 'severity' | 'for'> & {
    readonly severity: Readonly<Record<AlertName, Severity>>;
    readonly for: Readonly<Record<AlertName, string>>;
  };
}

/** A config problem, naming the field: `thresholds.acquireRiseFactor: Too small: ...`. */
export class DashboardsConfigError extends Error {}

/** Validates a config object (parsed YAML or JSON) and fills in the defaults. */
export function parseDashboardsConfig(input: unknown): DashboardsConfig {
  const result = dashboardsConfigSchema.safeParse(input ?? {});
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(top level)'}: ${issue.message}`);
    throw new DashboardsConfigError(problems.join('; '));
  }
  const parsed = result.data;
  if (parsed.thresholds.estimateBand.low >= parsed.thresholds.estimateBand.high) {
    throw new DashboardsConfigError('thresholds.estimateBand: low must be below high');
  }
  return {
    ...parsed,
    alerts: {
      ...parsed.alerts,
      severity: { ...defaultSeverities, ...parsed.alerts.severity },
      for: { ...defaultForDurations, ...parsed.alerts.for },
    },
  };
}

/** quotascope's own stack. */
export const defaultConfig: DashboardsConfig = parseDashboardsConfig({});

/** The selector bodies the panels, variables and rules use, built from the config's selectors. */
export interface Selectors {
  /** The agent service scrape (no variables): rules and the dashboards' job variable. */
  readonly agentScrape: string;
  /** The mock provider scrape (no variables); null when the stack has none. */
  readonly mockScrape: string | null;
  /** The k6 remote-write series (no variables). */
  readonly k6Scrape: string;
  /** Limiter gauges on a dashboard: labelled by limiter (and job/instance by Prometheus). */
  readonly limiter: string;
  /** Limiter metrics that also carry the calling agent. */
  readonly limiterAgent: string;
  /** Agent service request metrics. */
  readonly agentService: string;
  /** Mock provider metrics on its own dashboard (its job/instance variables). */
  readonly mockDashboard: string;
  /** k6 metrics (remote write carries the k6 tags, no job). */
  readonly k6: string;
}

const jobInstance = 'job=~"$job", instance=~"$instance"';

export function selectorsOf(config: DashboardsConfig): Selectors {
  const agent = joinSelectors(config.selectors.agent);
  const mock = config.selectors.mockProvider === null ? null : joinSelectors(config.selectors.mockProvider);
  const k6 = joinSelectors(config.selectors.k6);
  return {
    agentScrape: agent,
    mockScrape: mock,
    k6Scrape: k6,
    limiter: joinSelectors(agent, jobInstance, 'limiter=~"$limiter"'),
    limiterAgent: joinSelectors(agent, jobInstance, 'limiter=~"$limiter"', 'agent=~"$agent"'),
    agentService: joinSelectors(agent, jobInstance),
    mockDashboard: joinSelectors(mock ?? '', jobInstance),
    k6: joinSelectors(k6, 'scenario=~"$scenario"'),
  };
}
