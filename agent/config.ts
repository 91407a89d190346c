// Agent service configuration: one zod schema with the worked example's defaults (the
// `agent` and `serve` commands make their flags from it). Every bad value fails naming its option.
import { z } from 'zod';
import { CENTRAL_OUTAGE_POLICIES } from '../instrumentation/budget/budget.ts';
import { DEFAULT_WINDOW_MS, MAX_PERMITS, MAX_WINDOW_MS, MIN_WINDOW_MS } from '../instrumentation/defaults.ts';
import { limiterOptionFields } from '../instrumentation/limiter-options.ts';
import { checkServerLimits, DEFAULT_HOST, milliseconds, serverLimitFields } from './http-server.ts';
import { perModelSchema, valueForModel } from './per-model.ts';
import { WORKED_EXAMPLE, WORKED_EXAMPLE_TOKENS_PER_MINUTE } from './worked-example.ts';

export const QUOTA_SHARING_MODES = ['static', 'central', 'adaptive'] as const;
export type QuotaSharing = (typeof QUOTA_SHARING_MODES)[number];

/** Who shares a provider quota: each model its own (Gemini's scope, per project and model), or every model of the key one. */
export const QUOTA_SCOPES = ['model', 'key'] as const;
export type QuotaScope = (typeof QUOTA_SCOPES)[number];

export const BUDGET_WINDOW_MODES = ['rolling', 'bucket'] as const;
export type BudgetWindow = (typeof BUDGET_WINDOW_MODES)[number];

/** Far above any provider's quota, low enough that token sums stay exact integers. */
const MAX_TOKENS_PER_MINUTE = 1_000_000_000_000;
/** Far above any model's context window plus output. */
const MAX_TOKENS_PER_CALL = 100_000_000;
/** The limiter's own options (bounds, defaults and help), as instrumentation/limiter-options.ts defines them. */
const limiterOption = limiterOptionFields.shape;

/** The options as a plain object (its `.shape` lets other commands reuse single fields). */
export const agentServiceFields = z.object({
  /** Port of the first replica; 0 picks a free one. */
  port: z.int().min(0).max(65_535).default(8080),
  /** Loopback unless told otherwise (containers pass 0.0.0.0). */
  host: z.string().min(1).default(DEFAULT_HOST),
  /** Base URL of the Gemini-compatible provider (the mock provider by default). */
  providerUrl: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8090'),
  /** Provider API key. The mock accepts any; never logged. */
  apiKey: z.string().min(1).default('quotascope-local'),
  model: z.string().min(1).default('gemini-2.5-flash'),
  /** Name of the limiter: the `limiter` label of the llm_limiter_* metrics. */
  limiterName: z.string().regex(/^[a-z][a-z0-9_-]*$/).default('gemini'),
  permits: limiterOption.permits,
  /**
   * Token budget per minute (per quota window) for the WHOLE fleet, each replica getting
   * replicaShare of it: one number for every model, or one per model (`{ "gemini-2.5-pro":
   * 450000, "*": 900000 }`), each model's limiter taking its own model's.
   */
  tokensPerMinute: perModelSchema(z.int().min(1).max(MAX_TOKENS_PER_MINUTE), WORKED_EXAMPLE_TOKENS_PER_MINUTE),
  /**
   * The provider quota's scope: `model` (each model its own quota and limiter budget, as
   * Gemini counts) or `key` (every model draws from one quota: the limiters share one budget).
   */
  quotaScope: z.enum(QUOTA_SCOPES).default('model'),
  countedTokens: limiterOption.countedTokens,
  /** The provider quota's window, ms: the budget holds and refills tokensPerMinute per window. */
  quotaWindowMs: z.int().min(MIN_WINDOW_MS).max(MAX_WINDOW_MS).default(DEFAULT_WINDOW_MS),
  /** Share of tokensPerMinute this replica may spend (1/replicas when several share a quota). */
  replicaShare: z.number().gt(0).max(1).default(1),
  /**
   * Fixed up-front reservation per call. Unset (the default): reserve the request's input
   * tokens (counted) plus a per-agent estimate of output learned from reported usage.
   */
  estimatedTokensPerCall: z.int().min(1).max(MAX_TOKENS_PER_CALL).optional(),
  /** Output tokens assumed for an agent before any of its usage was seen (when countedTokens is total). */
  initialOutputTokens: z.int().min(0).max(MAX_TOKENS_PER_CALL).default(WORKED_EXAMPLE.outputTokensPerCall),
  maxWaitMs: limiterOption.maxWaitMs,
  admission: limiterOption.admission,
  requestDeadlineMs: limiterOption.requestDeadlineMs,
  expectedCallMs: limiterOption.expectedCallMs,
  /**
   * Counted tokens per call each model's limiter expects before it has measured a call (a
   * calibration's, or a declared maximum): a cold burst is funded whole from it. One number,
   * or per model. Unset: one request learns the cost while the others wait at the door.
   */
  expectedTokensPerCall: perModelSchema(z.int().min(1).max(MAX_TOKENS_PER_CALL)).optional(),
  /** HTTP timeout of one provider request (genai has none by default). */
  httpTimeoutMs: milliseconds.default(120_000),
  /** Stream model responses (SSE, streamGenerateContent) instead of one unary call each. */
  streaming: z.boolean().default(false),
  /** How long the `tools` tree's slow function tool takes. */
  toolDelayMs: z.int().min(0).max(600_000).default(1_000),
  /**
   * JSON-lines access log (one line per finished run request, the shape
   * loadtest/scenario/trace-convert.ts replays): a file appended to, or `-` for stdout. Off if unset.
   */
  accessLog: z.string().min(1).optional(),
  /**
   * How replicas share the provider quota: `static` (each replica a fixed share of the
   * budget, its own token bucket), `central` (one token bucket in Redis for the whole fleet),
   * `adaptive` (the static token share, and AIMD moves the permit limit on 429s / slow calls).
   */
  quotaSharing: z.enum(QUOTA_SHARING_MODES).default('static'),
  /**
   * The local TokenBudget's guard: `rolling` (the bucket AND never more than its tokens per
   * minute in any rolling 60 s window: provider quotas are per-minute windows, which a full
   * bucket draining would overrun by up to 2×) or `bucket` (the bucket alone, for a quota
   * that refills continuously). `central` mode's Redis bucket is always the bucket alone.
   */
  budgetWindow: z.enum(BUDGET_WINDOW_MODES).default('rolling'),
  /** Redis for `central`: the bucket's key is `quotascope:budget:<limiterName>`. */
  redisUrl: z.url({ protocol: /^rediss?$/ }).optional(),
  /**
   * `central` while Redis is unreachable: `fail-open` (reservations served by this replica's
   * static share, tokensPerMinute × replicaShare) or `fail-closed` (model calls refused with
   * BUDGET_UNAVAILABLE, shown in the branch outcomes).
   */
  centralOutage: z.enum(CENTRAL_OUTAGE_POLICIES).default('fail-open'),
  maxWaiting: limiterOption.maxWaiting,
  /** `adaptive`: the most permits AIMD may grow to (default 2 × permits). */
  adaptiveMaxPermits: z.int().min(1).max(MAX_PERMITS).optional(),
  /** `adaptive`: a model call slower than this counts as congestion, like a 429 (default: only 429s). */
  adaptiveLatencyMs: milliseconds.optional(),
  /**
   * Most permits requests with trafficClass `batch` may hold at once, so a backfill cannot
   * starve interactive users (interactive calls are never capped). Unset: half the permits,
   * rounded down, at least 1. `off` (or a value equal to permits) disables the lanes.
   */
  batchMaxPermits: z.union([z.literal('off'), z.int().min(1).max(MAX_PERMITS)]).optional(),
  /** The HTTP server's limits, as every quotascope server has them (the run itself is bounded by maxWait and the provider timeout). */
  ...serverLimitFields.shape,
  /** On close: how long in-flight runs may go on to finish and answer before they are aborted (and answer 503). */
  shutdownGraceMs: milliseconds.default(3_000),
});

/** The HTTP server's limits and shutdown grace: every command that serves HTTP takes these fields. */
export const SERVER_LIMIT_KEYS = ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxConnections', 'shutdownGraceMs'] as const satisfies readonly (keyof z.infer<
  typeof agentServiceFields
>)[];
/** The server limits' cross-field rule, for the commands that build their schema from these fields. */
export { checkServerLimits };

/** The limiter fields a command takes from agentServiceFields; the cross-field rules below need them. */
type LimiterRuleFields = Pick<z.infer<typeof agentServiceFields>, 'quotaSharing' | 'redisUrl' | 'adaptiveMaxPermits' | 'permits' | 'batchMaxPermits' | 'quotaScope' | 'tokensPerMinute'>;

/** Cross-field rules of the limiter options, shared by every command that takes them. */
export function checkLimiterOptions(options: LimiterRuleFields, ctx: z.RefinementCtx): void {
  if (options.quotaSharing === 'central' && options.redisUrl === undefined) {
    ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'required when quotaSharing is "central" (the shared token bucket lives in Redis)' });
  }
  if (options.adaptiveMaxPermits !== undefined && options.adaptiveMaxPermits < options.permits) {
    ctx.addIssue({ code: 'custom', path: ['adaptiveMaxPermits'], message: `must be >= permits (${options.permits})` });
  }
  if (options.quotaScope === 'key' && typeof options.tokensPerMinute !== 'number') {
    ctx.addIssue({ code: 'custom', path: ['tokensPerMinute'], message: 'per-model values need quotaScope "model" (with quotaScope "key" every model shares one budget)' });
  }
  if (typeof options.batchMaxPermits === 'number' && options.batchMaxPermits > options.permits) {
    ctx.addIssue({ code: 'custom', path: ['batchMaxPermits'], message: `must be <= permits (${options.permits}), or "off"` });
  }
}

export const agentServiceOptionsSchema = agentServiceFields.superRefine((options, ctx) => {
  checkLimiterOptions(options, ctx);
  checkServerLimits(options, ctx);
});

export type AgentServiceOptions = z.infer<typeof agentServiceOptionsSchema>;
export type AgentServiceOptionsInput = z.input<typeof agentServiceOptionsSchema>;

/** The options one limiter (createLimiter) is built from: every command with a limiter takes these fields. */
export const LIMITER_OPTION_KEYS = [
  'limiterName',
  'permits',
  'tokensPerMinute',
  'quotaScope',
  'countedTokens',
  'quotaWindowMs',
  'replicaShare',
  'estimatedTokensPerCall',
  'initialOutputTokens',
  'maxWaitMs',
  'admission',
  'requestDeadlineMs',
  'expectedCallMs',
  'expectedTokensPerCall',
  'quotaSharing',
  'budgetWindow',
  'redisUrl',
  'centralOutage',
  'maxWaiting',
  'adaptiveMaxPermits',
  'adaptiveLatencyMs',
  'batchMaxPermits',
] as const satisfies readonly (keyof AgentServiceOptions)[];
export type LimiterOptions = Pick<AgentServiceOptions, (typeof LIMITER_OPTION_KEYS)[number]>;
/** The options of one model's limiter: its own model's budget. */
export type ModelLimiterOptions = Omit<LimiterOptions, 'tokensPerMinute' | 'quotaScope' | 'expectedTokensPerCall'> & {
  readonly tokensPerMinute: number;
  readonly expectedTokensPerCall?: number;
};

/** The options of `model`'s limiter: its own model's budget (a model not named takes `*`, else the default), under `limiterName`. */
export function modelLimiterOptions(options: LimiterOptions, model: string, limiterName = options.limiterName): ModelLimiterOptions {
  const { quotaScope: _scope, ...rest } = options;
  const expected = options.expectedTokensPerCall;
  return {
    ...rest,
    limiterName,
    tokensPerMinute: valueForModel(options.tokensPerMinute, model, WORKED_EXAMPLE_TOKENS_PER_MINUTE),
    expectedTokensPerCall: expected === undefined ? undefined : valueForModel(expected, model, Number.NaN) || undefined,
  };
}

/** The batch lane's permit cap, or undefined when lanes are off (`off`, or a cap equal to permits). */
export function batchLanePermits(options: Pick<AgentServiceOptions, 'permits' | 'batchMaxPermits'>): number | undefined {
  const cap = options.batchMaxPermits ?? Math.max(1, Math.floor(options.permits / 2));
  return cap === 'off' || cap >= options.permits ? undefined : cap;
}

export class AgentConfigError extends Error {
  override name = 'AgentConfigError';
}

/** A zod error as one line: each issue prefixed by where its value came from. */
export function formatIssues(error: z.ZodError, origin: (key: string) => string): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? origin(String(issue.path[0])) : '(options)'}: ${issue.message}`)
    .join('; ');
}

/** Validates programmatic options (startAgentService); errors name the option. */
export function parseServiceOptions(input: AgentServiceOptionsInput | undefined): AgentServiceOptions {
  const result = agentServiceOptionsSchema.safeParse(input ?? {});
  if (!result.success) throw new AgentConfigError(`invalid agent service options: ${formatIssues(result.error, (k) => k)}`);
  return result.data;
}
