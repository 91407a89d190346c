// Agent service configuration: one zod schema with the worked example's defaults, read
// from flags over environment variables over defaults. Every bad value fails with the
// flag or variable it came from.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { CENTRAL_OUTAGE_POLICIES } from '../instrumentation/budget.ts';
import { COUNTED_TOKEN_KINDS } from '../instrumentation/counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS, DEFAULT_WINDOW_MS, MAX_WAITING_LIMIT, MAX_WINDOW_MS, MIN_WINDOW_MS } from '../instrumentation/defaults.ts';
import { MAX_WAIT_SECONDS_LIMIT } from '../instrumentation/metrics/definitions.ts';
import { WORKED_EXAMPLE, WORKED_EXAMPLE_TOKENS_PER_MINUTE } from './worked-example.ts';

export const QUOTA_SHARING_MODES = ['static', 'central', 'adaptive'] as const;
export type QuotaSharing = (typeof QUOTA_SHARING_MODES)[number];

export const BUDGET_WINDOW_MODES = ['rolling', 'bucket'] as const;
export type BudgetWindow = (typeof BUDGET_WINDOW_MODES)[number];

/** Node fires a timer set above 2^31-1 ms (about 24.8 days) after 1 ms instead: every ms setting stays at or below it. */
export const MAX_TIMER_MS = 2_147_483_647;
const milliseconds = z.int().min(1).max(MAX_TIMER_MS);
/** Far above any provider's quota, low enough that token sums stay exact integers. */
const MAX_TOKENS_PER_MINUTE = 1_000_000_000_000;
/** Far above any model's context window plus output. */
const MAX_TOKENS_PER_CALL = 100_000_000;

/** The options as a plain object (its `.shape` lets other commands reuse single fields). */
export const agentServiceFields = z.object({
  /** Port of the first replica; 0 picks a free one. */
  port: z.int().min(0).max(65_535).default(8080),
  /** Loopback unless told otherwise (containers pass 0.0.0.0). */
  host: z.string().min(1).default('127.0.0.1'),
  /** Base URL of the Gemini-compatible provider (the mock provider by default). */
  providerUrl: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8090'),
  /** Provider API key. The mock accepts any; never logged. */
  apiKey: z.string().min(1).default('quotascope-local'),
  model: z.string().min(1).default('gemini-2.5-flash'),
  /** Name of the limiter: the `limiter` label of the llm_limiter_* metrics. */
  limiterName: z.string().regex(/^[a-z][a-z0-9_-]*$/).default('gemini'),
  /** Concurrent model calls per replica. */
  permits: z.int().min(1).max(10_000).default(WORKED_EXAMPLE.permits),
  /** Token budget per minute (per quota window) for the WHOLE fleet; each replica gets replicaShare of it. */
  tokensPerMinute: z.int().min(1).max(MAX_TOKENS_PER_MINUTE).default(WORKED_EXAMPLE_TOKENS_PER_MINUTE),
  /** Which tokens the budget counts, as the provider's quota does: `input` (Gemini's TPM) or `total`. */
  countedTokens: z.enum(COUNTED_TOKEN_KINDS).default(DEFAULT_COUNTED_TOKENS),
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
  /** Longest a call waits for a permit and budget before its branch times out. */
  maxWaitMs: z.int().min(1).max(MAX_WAIT_SECONDS_LIMIT * 1000).default(WORKED_EXAMPLE.maxWaitMs),
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
  /** Most calls waiting for a permit or budget at once; calls beyond it are refused at once (RATE_LIMIT_TIMEOUT, reason queue_full). Unset: no cap. */
  maxWaiting: z.int().min(1).max(MAX_WAITING_LIMIT).optional(),
  /** `adaptive`: the most permits AIMD may grow to (default 2 × permits). */
  adaptiveMaxPermits: z.int().min(1).max(10_000).optional(),
  /** `adaptive`: a model call slower than this counts as congestion, like a 429 (default: only 429s). */
  adaptiveLatencyMs: milliseconds.optional(),
  /**
   * Most permits requests with trafficClass `batch` may hold at once, so a backfill cannot
   * starve interactive users (interactive calls are never capped). Unset: half the permits,
   * rounded down, at least 1. `off` (or a value equal to permits) disables the lanes.
   */
  batchMaxPermits: z.union([z.literal('off'), z.int().min(1).max(10_000)]).optional(),
  /** Longest a client may take to send a request's headers (node's default is 60 s). */
  headersTimeoutMs: milliseconds.default(10_000),
  /** Longest a client may take to send a whole request, body included (not the run: that is bounded by maxWait and the provider timeout). */
  requestTimeoutMs: milliseconds.default(30_000),
  /** How long an idle keep-alive connection stays open (node's default, 5 s; put it above a load balancer's idle timeout). */
  keepAliveTimeoutMs: milliseconds.default(5_000),
  /** Open connections accepted at once; more are closed at accept. */
  maxConnections: z.int().min(1).max(1_000_000).default(1_024),
  /** On close: how long in-flight runs may go on to finish and answer before they are aborted (and answer 503). */
  shutdownGraceMs: milliseconds.default(3_000),
});

/** The HTTP server's limits and shutdown grace: every command that serves HTTP takes these fields. */
export const SERVER_LIMIT_KEYS = ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxConnections', 'shutdownGraceMs'] as const satisfies readonly (keyof z.infer<
  typeof agentServiceFields
>)[];
export type ServerLimits = Pick<z.infer<typeof agentServiceFields>, (typeof SERVER_LIMIT_KEYS)[number]>;

/** Cross-field rule of the server limits: node checks the headers timeout within the request timeout. */
export function checkServerLimits(options: Pick<ServerLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>, ctx: z.RefinementCtx): void {
  if (options.headersTimeoutMs > options.requestTimeoutMs) {
    ctx.addIssue({ code: 'custom', path: ['headersTimeoutMs'], message: `must be <= requestTimeoutMs (${options.requestTimeoutMs})` });
  }
}

/** The limiter fields a command takes from agentServiceFields; the cross-field rules below need them. */
type LimiterRuleFields = Pick<z.infer<typeof agentServiceFields>, 'quotaSharing' | 'redisUrl' | 'adaptiveMaxPermits' | 'permits' | 'batchMaxPermits'>;

/** Cross-field rules of the limiter options, shared by every command that takes them. */
export function checkLimiterOptions(options: LimiterRuleFields, ctx: z.RefinementCtx): void {
  if (options.quotaSharing === 'central' && options.redisUrl === undefined) {
    ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'required when quotaSharing is "central" (the shared token bucket lives in Redis)' });
  }
  if (options.adaptiveMaxPermits !== undefined && options.adaptiveMaxPermits < options.permits) {
    ctx.addIssue({ code: 'custom', path: ['adaptiveMaxPermits'], message: `must be >= permits (${options.permits})` });
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
  'countedTokens',
  'quotaWindowMs',
  'replicaShare',
  'estimatedTokensPerCall',
  'initialOutputTokens',
  'maxWaitMs',
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

/** The batch lane's permit cap, or undefined when lanes are off (`off`, or a cap equal to permits). */
export function batchLanePermits(options: Pick<AgentServiceOptions, 'permits' | 'batchMaxPermits'>): number | undefined {
  const cap = options.batchMaxPermits ?? Math.max(1, Math.floor(options.permits / 2));
  return cap === 'off' || cap >= options.permits ? undefined : cap;
}

export class AgentConfigError extends Error {
  override name = 'AgentConfigError';
}

/** Where each option comes from: `--flag` and `ENV_VAR`. */
export const OPTION_SOURCES = {
  port: { flag: 'port', env: 'AGENT_PORT' },
  host: { flag: 'host', env: 'AGENT_HOST' },
  providerUrl: { flag: 'provider-url', env: 'PROVIDER_URL' },
  apiKey: { flag: 'api-key', env: 'PROVIDER_API_KEY' },
  model: { flag: 'model', env: 'AGENT_MODEL' },
  limiterName: { flag: 'limiter-name', env: 'LIMITER_NAME' },
  permits: { flag: 'permits', env: 'LIMITER_PERMITS' },
  tokensPerMinute: { flag: 'tokens-per-minute', env: 'LIMITER_TOKENS_PER_MINUTE' },
  countedTokens: { flag: 'counted-tokens', env: 'LIMITER_COUNTED_TOKENS' },
  quotaWindowMs: { flag: 'quota-window-ms', env: 'LIMITER_QUOTA_WINDOW_MS' },
  replicaShare: { flag: 'replica-share', env: 'LIMITER_REPLICA_SHARE' },
  estimatedTokensPerCall: { flag: 'estimated-tokens-per-call', env: 'LIMITER_ESTIMATED_TOKENS_PER_CALL' },
  initialOutputTokens: { flag: 'initial-output-tokens', env: 'LIMITER_INITIAL_OUTPUT_TOKENS' },
  maxWaitMs: { flag: 'max-wait-ms', env: 'LIMITER_MAX_WAIT_MS' },
  httpTimeoutMs: { flag: 'http-timeout-ms', env: 'PROVIDER_TIMEOUT_MS' },
  toolDelayMs: { flag: 'tool-delay-ms', env: 'TOOL_DELAY_MS' },
  streaming: { flag: 'streaming', env: 'AGENT_STREAMING' },
  accessLog: { flag: 'access-log', env: 'AGENT_ACCESS_LOG' },
  quotaSharing: { flag: 'quota-sharing', env: 'AGENT_QUOTA_SHARING' },
  budgetWindow: { flag: 'budget-window', env: 'AGENT_BUDGET_WINDOW' },
  redisUrl: { flag: 'redis-url', env: 'REDIS_URL' },
  centralOutage: { flag: 'central-outage', env: 'AGENT_CENTRAL_OUTAGE' },
  maxWaiting: { flag: 'max-waiting', env: 'LIMITER_MAX_WAITING' },
  adaptiveMaxPermits: { flag: 'adaptive-max-permits', env: 'LIMITER_ADAPTIVE_MAX_PERMITS' },
  adaptiveLatencyMs: { flag: 'adaptive-latency-ms', env: 'LIMITER_ADAPTIVE_LATENCY_MS' },
  batchMaxPermits: { flag: 'batch-max-permits', env: 'AGENT_BATCH_MAX_PERMITS' },
  headersTimeoutMs: { flag: 'headers-timeout-ms', env: 'AGENT_HEADERS_TIMEOUT_MS' },
  requestTimeoutMs: { flag: 'request-timeout-ms', env: 'AGENT_REQUEST_TIMEOUT_MS' },
  keepAliveTimeoutMs: { flag: 'keep-alive-timeout-ms', env: 'AGENT_KEEP_ALIVE_TIMEOUT_MS' },
  maxConnections: { flag: 'max-connections', env: 'AGENT_MAX_CONNECTIONS' },
  shutdownGraceMs: { flag: 'shutdown-grace-ms', env: 'AGENT_SHUTDOWN_GRACE_MS' },
} as const satisfies Record<keyof AgentServiceOptions, { flag: string; env: string }>;

const NUMERIC = new Set<string>([
  'port',
  'permits',
  'tokensPerMinute',
  'quotaWindowMs',
  'replicaShare',
  'estimatedTokensPerCall',
  'initialOutputTokens',
  'maxWaitMs',
  'httpTimeoutMs',
  'toolDelayMs',
  'adaptiveMaxPermits',
  'adaptiveLatencyMs',
  'headersTimeoutMs',
  'requestTimeoutMs',
  'keepAliveTimeoutMs',
  'maxConnections',
  'shutdownGraceMs',
  'maxWaiting',
]);

const BOOLEAN = new Set<string>(['streaming']);

/** Numbers, or the literal `off`. */
const NUMBER_OR_OFF = new Set<string>(['batchMaxPermits']);

/** 'true'/'1'/'yes' and 'false'/'0'/'no'; anything else is left for zod to reject by name. */
function parseBoolean(value: string): boolean | string {
  if (/^(true|1|yes)$/i.test(value)) return true;
  if (/^(false|0|no)$/i.test(value)) return false;
  return value;
}

export type OptionKey = keyof typeof OPTION_SOURCES;

/**
 * The values of `keys` from parsed flags over env variables, typed for the schema (numbers,
 * booleans, `off`), and where each came from (`--flag` or the variable) for error messages.
 */
export function readOptionSources(
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv,
  keys: readonly OptionKey[],
): { raw: Record<string, unknown>; origin: Record<string, string> } {
  const raw: Record<string, unknown> = {};
  const origin: Record<string, string> = {};
  for (const key of keys) {
    const source = OPTION_SOURCES[key];
    const flagValue = values[source.flag];
    const value = typeof flagValue === 'string' ? flagValue : env[source.env];
    if (value === undefined || value === '') continue;
    raw[key] = NUMERIC.has(key)
      ? Number(value)
      : BOOLEAN.has(key)
        ? parseBoolean(value)
        : NUMBER_OR_OFF.has(key) && value !== 'off' && value.trim() !== '' && !Number.isNaN(Number(value))
          ? Number(value)
          : value;
    origin[key] = typeof flagValue === 'string' ? `--${source.flag}` : source.env;
  }
  return { raw, origin };
}

/** A zod error as one line: each issue prefixed by where its value came from. */
export function formatIssues(error: z.ZodError, origin: (key: string) => string): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? origin(String(issue.path[0])) : '(options)'}: ${issue.message}`)
    .join('; ');
}

export interface CliConfig {
  service: AgentServiceOptions;
  /** Independent replicas on consecutive ports starting at service.port. */
  replicas: number;
}

export const CLI_USAGE = `usage: node agent/cli.ts [flags]
  --port N                       first replica's port (AGENT_PORT, default 8080; 0 = any free port)
  --host H                       bind address (AGENT_HOST, default 127.0.0.1)
  --provider-url URL             Gemini-compatible provider (PROVIDER_URL, default http://127.0.0.1:8090)
  --api-key KEY                  provider key (PROVIDER_API_KEY; prefer the env variable)
  --model NAME                   model name (AGENT_MODEL, default gemini-2.5-flash)
  --limiter-name NAME            limiter label (LIMITER_NAME, default gemini)
  --permits N                    concurrent model calls per replica (LIMITER_PERMITS, default ${WORKED_EXAMPLE.permits})
  --tokens-per-minute N          fleet token budget per quota window (LIMITER_TOKENS_PER_MINUTE, default ${WORKED_EXAMPLE_TOKENS_PER_MINUTE})
  --counted-tokens input|total   tokens the budget counts, as the provider's quota does (LIMITER_COUNTED_TOKENS,
                                 default input: Gemini's TPM counts input tokens)
  --quota-window-ms N            the provider quota's window, ms (LIMITER_QUOTA_WINDOW_MS, default 60000)
  --replica-share F              share of the budget per replica (LIMITER_REPLICA_SHARE, default 1/replicas)
  --estimated-tokens-per-call N  fixed up-front reservation (LIMITER_ESTIMATED_TOKENS_PER_CALL; default: input + learned output)
  --initial-output-tokens N      output assumed before usage is seen, counting total (LIMITER_INITIAL_OUTPUT_TOKENS, default ${WORKED_EXAMPLE.outputTokensPerCall})
  --max-wait-ms N                bounded wait for permit + budget (LIMITER_MAX_WAIT_MS, default ${WORKED_EXAMPLE.maxWaitMs})
  --http-timeout-ms N            provider HTTP timeout (PROVIDER_TIMEOUT_MS, default 120000)
  --tool-delay-ms N              the tools tree's slow tool (TOOL_DELAY_MS, default 1000)
  --streaming true|false         SSE model calls (AGENT_STREAMING, default false)
  --access-log FILE|-            JSON-lines access log, appended; - = stdout (AGENT_ACCESS_LOG, default off)
  --quota-sharing MODE           static | central | adaptive (AGENT_QUOTA_SHARING, default static)
  --budget-window rolling|bucket token budget guard (AGENT_BUDGET_WINDOW, default rolling): rolling also caps
                                 every rolling 60 s at the budget, as per-minute provider quotas count
  --redis-url URL                Redis of the shared token bucket, for central (REDIS_URL)
  --central-outage POLICY        central, Redis unreachable: fail-open (the static share) | fail-closed
                                 (calls refused with BUDGET_UNAVAILABLE) (AGENT_CENTRAL_OUTAGE, default fail-open)
  --max-waiting N                most calls waiting for a permit or budget; more are refused at once
                                 (queue_full) (LIMITER_MAX_WAITING, default no cap)
  --adaptive-max-permits N       adaptive: most permits AIMD may grow to (LIMITER_ADAPTIVE_MAX_PERMITS, default 2 x permits)
  --adaptive-latency-ms N        adaptive: a slower call counts as congestion (LIMITER_ADAPTIVE_LATENCY_MS, default off)
  --batch-max-permits N|off      most permits trafficClass "batch" requests may hold (AGENT_BATCH_MAX_PERMITS,
                                 default half the permits, min 1; off or = permits: no lanes)
  --headers-timeout-ms N         longest a client may take to send headers (AGENT_HEADERS_TIMEOUT_MS, default 10000)
  --request-timeout-ms N         longest a client may take to send a whole request (AGENT_REQUEST_TIMEOUT_MS, default 30000)
  --keep-alive-timeout-ms N      idle keep-alive connections close after this (AGENT_KEEP_ALIVE_TIMEOUT_MS, default 5000)
  --max-connections N            open connections accepted at once (AGENT_MAX_CONNECTIONS, default 1024)
  --shutdown-grace-ms N          on SIGTERM, in-flight runs may finish this long, then they are aborted and answer 503
                                 (AGENT_SHUTDOWN_GRACE_MS, default 3000)
  --replicas N                   start N replicas on consecutive ports (AGENT_REPLICAS, default 1)
  --help`;

/** Validates programmatic options (startAgentService); errors name the option. */
export function parseServiceOptions(input: AgentServiceOptionsInput | undefined): AgentServiceOptions {
  const result = agentServiceOptionsSchema.safeParse(input ?? {});
  if (!result.success) throw new AgentConfigError(`invalid agent service options: ${formatIssues(result.error, (k) => k)}`);
  return result.data;
}

/** Flags over env over defaults. Throws AgentConfigError naming the flag or variable. */
export function parseCliConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliConfig | 'help' {
  const flagOptions: Record<string, { type: 'string' | 'boolean' }> = { replicas: { type: 'string' }, help: { type: 'boolean' } };
  for (const source of Object.values(OPTION_SOURCES)) flagOptions[source.flag] = { type: 'string' };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: [...argv], options: flagOptions, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new AgentConfigError(`${(error as Error).message}\n${CLI_USAGE}`);
  }
  if (values.help) return 'help';

  const { raw, origin } = readOptionSources(values, env, Object.keys(OPTION_SOURCES) as OptionKey[]);

  const replicasText = typeof values.replicas === 'string' ? values.replicas : env.AGENT_REPLICAS;
  const replicas = z.coerce.number().int().min(1).max(64).safeParse(replicasText ?? 1);
  if (!replicas.success) {
    throw new AgentConfigError(`${typeof values.replicas === 'string' ? '--replicas' : 'AGENT_REPLICAS'}: ${replicas.error.issues[0]?.message}`);
  }
  // Replicas started together split the fleet budget evenly unless told otherwise.
  if (raw.replicaShare === undefined) raw.replicaShare = 1 / replicas.data;

  const result = agentServiceOptionsSchema.safeParse(raw);
  // A value given names its flag or variable; a missing one (e.g. --redis-url for central) names both.
  const sourceOf = (k: string) => {
    const source = OPTION_SOURCES[k as keyof typeof OPTION_SOURCES];
    return origin[k] ?? (source ? `--${source.flag} (${source.env})` : k);
  };
  if (!result.success) throw new AgentConfigError(`invalid agent configuration: ${formatIssues(result.error, sourceOf)}`);
  if (result.data.port !== 0 && result.data.port + replicas.data - 1 > 65_535) {
    throw new AgentConfigError(`--replicas: ${replicas.data} replicas from port ${result.data.port} run past 65535`);
  }
  return { service: result.data, replicas: replicas.data };
}
