// The mock provider's whole configuration: one zod schema (with defaults), the merge rule
// used by PUT /admin/config and timeline steps, and readable validation errors.
import { z } from 'zod';

import { checkServerLimits, MAX_TIMER_MS, serverLimitFields } from '../agent/http-server.ts';

export { MAX_TIMER_MS };
/** Most output tokens per response: above the output limit of any current model. */
export const MAX_OUTPUT_TOKENS = 131_072;
/** Longest time to first token, ms (10 minutes: provider clients time out well before). */
export const MAX_LATENCY_MS = 600_000;
/** Longest time per output token, ms; MAX_OUTPUT_TOKENS of it stays below MAX_TIMER_MS. */
export const MAX_PER_TOKEN_MS = 10_000;
/** Quota bounds: far above any real provider's, low enough to stay exact integers in every sum. */
const MAX_REQUESTS_PER_MINUTE = 100_000_000;
const MAX_TOKENS_PER_MINUTE = 1_000_000_000_000;
const MAX_CONCURRENT = 1_000_000;
/** Largest request body the mock will buffer. */
const MAX_BODY_BYTES = 256 * 1024 * 1024;
/** Latest timeline step: 30 days after the timeline starts. */
const MAX_TIMELINE_SECONDS = 30 * 86_400;

/** A distribution to sample from, every parameter within [0, max] (samples are clamped to max too). */
export function boundedDistributionSchema(max: number) {
  const bounded = z.number().nonnegative().max(max);
  return z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('fixed'), value: bounded }),
    z
      .strictObject({ kind: z.literal('uniform'), min: bounded, max: bounded })
      .refine((d) => d.max >= d.min, { message: 'max must be >= min', path: ['max'] }),
    z.strictObject({ kind: z.literal('normal'), mean: bounded, stddev: bounded }),
    z
      .strictObject({ kind: z.literal('lognormal'), p50: bounded.positive(), p99: bounded.positive() })
      .refine((d) => d.p99 >= d.p50, { message: 'p99 must be >= p50', path: ['p99'] }),
  ]);
}
/** Units are those of the field that holds it (ms, tokens). */
export type Distribution = z.infer<ReturnType<typeof boundedDistributionSchema>>;

const probability = z.number().min(0).max(1);

const FAULT_PROBABILITIES = ['http500Probability', 'http503Probability', 'streamErrorProbability', 'connectionResetProbability', 'stallProbability'] as const;

export const faultsSchema = z
  .strictObject({
    /** Probability that a request answers HTTP 500 INTERNAL. */
    http500Probability: probability.default(0),
    /** Probability that a request answers HTTP 503 UNAVAILABLE. */
    http503Probability: probability.default(0),
    /** Probability that a streamed response sends an error event after `streamErrorAfterChunks` chunks. */
    streamErrorProbability: probability.default(0),
    streamErrorAfterChunks: z.number().int().nonnegative().max(MAX_OUTPUT_TOKENS).default(1),
    /** Probability that the connection is reset (socket destroyed) mid-response. */
    connectionResetProbability: probability.default(0),
    /** Probability that a response stalls: a stream stops after its first chunk, a plain call never answers. */
    stallProbability: probability.default(0),
    /** How long a stall lasts before the server drops the connection. */
    stallMs: z.number().int().nonnegative().max(MAX_TIMER_MS).default(600_000),
  })
  // One draw picks at most one fault per request, so their probabilities share [0, 1].
  .superRefine((f, ctx) => {
    const sum = FAULT_PROBABILITIES.reduce((total, key) => total + f[key], 0);
    if (sum > 1 + 1e-9) ctx.addIssue({ code: 'custom', message: `the fault probabilities (${FAULT_PROBABILITIES.join(', ')}) sum to ${Number(sum.toFixed(6))}, more than 1` });
  });
export type FaultsConfig = z.infer<typeof faultsSchema>;

/** Limits of the mock's HTTP server, set when it starts (not through the admin API): every quotascope server's, unknown fields refused. */
export const serverLimitsSchema = z.strictObject(serverLimitFields.shape).superRefine(checkServerLimits);
export type ServerLimits = z.infer<typeof serverLimitsSchema>;
export type ServerLimitsInput = z.input<typeof serverLimitsSchema>;

/** Validates server limits; throws ConfigError naming the field. */
export function parseServerLimits(input: unknown): ServerLimits {
  const result = serverLimitsSchema.safeParse(input ?? {});
  if (!result.success) {
    throw new ConfigError(`invalid mock-provider server limits: ${formatIssues(result.error)}`, result.error.issues.map((issue) => issue.path.join('.')));
  }
  return result.data;
}

const timelineStepSchema = z.strictObject({
  /** Seconds after the timeline started (server start, reset, or the PUT that set the timeline). */
  at: z.number().nonnegative().max(MAX_TIMELINE_SECONDS),
  /** Partial configuration merged over the current one when the step is due. */
  set: z.record(z.string(), z.unknown()),
});

/** The key of a per-model quota that applies to every model not named: `*`. */
export const EVERY_OTHER_MODEL = '*';
/** Model names as a per-model quota names them (Gemini's and OpenAI's ids), or `*`. */
const quotaModelKey = z
  .string()
  .max(200)
  .regex(/^(\*|[A-Za-z0-9][\w.:/-]*)$/, 'a model name (letters, digits, . _ - : /) or * for every other model');

/**
 * One quota for every model (a number), or per model: `{ "gemini-2.5-pro": 500000, "*": 1000000 }`.
 * A model not named takes `*`, else the field's default.
 */
function perModelLimit(limit: z.ZodNumber, fallback: number) {
  const perModel = z.record(quotaModelKey, limit).refine((r) => Object.keys(r).length >= 1 && Object.keys(r).length <= 1000, 'name 1 to 1000 models');
  // One branch per input kind, so an error names what is wrong with the value given.
  return z
    .custom<PerModelLimit>(() => true)
    .superRefine((value, ctx) => {
      const result = (typeof value === 'object' && value !== null ? perModel : limit).safeParse(value);
      for (const issue of result.error?.issues ?? []) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    })
    .default(fallback);
}
const DEFAULT_REQUESTS_PER_MINUTE = 1000;
const DEFAULT_TOKENS_PER_MINUTE = 1_000_000;
/** A per-model limit as the config holds it. */
export type PerModelLimit = number | Readonly<Record<string, number>>;

/** The limit of `model` under a per-model limit (a model not named takes `*`, else `fallback`). */
export function limitForModel(limit: PerModelLimit, model: string, fallback: number): number {
  if (typeof limit === 'number') return limit;
  return limit[model] ?? limit[EVERY_OTHER_MODEL] ?? fallback;
}

/** Where quotas are counted: `model` (Gemini's: per project and per model) or `key` (one quota per key shared by every model). */
export const QUOTA_SCOPES = ['model', 'key'] as const;
export type QuotaScope = (typeof QUOTA_SCOPES)[number];

/** Every field has a default, so `{}` is a valid configuration (the worked example's quota). */
export const mockConfigSchema = z.strictObject({
  /**
   * Who shares a quota: `model` (the default, as Gemini counts: each API key or project has
   * its own quotas per model) or `key` (every model of a key draws from one quota).
   */
  quotaScope: z.enum(QUOTA_SCOPES).default('model'),
  /** Requests per minute per quota scope; a number for every model, or per model (quotaScope model). */
  requestsPerMinute: perModelLimit(z.number().int().positive().max(MAX_REQUESTS_PER_MINUTE), DEFAULT_REQUESTS_PER_MINUTE),
  /** Tokens per minute per quota scope (which tokens count is `countedTokens`); a number, or per model. */
  tokensPerMinute: perModelLimit(z.number().int().positive().max(MAX_TOKENS_PER_MINUTE), DEFAULT_TOKENS_PER_MINUTE),
  /** Requests per day per API key (fixed UTC day); null = no daily quota. */
  requestsPerDay: z.number().int().positive().max(MAX_REQUESTS_PER_MINUTE * 1440).nullable().default(null),
  /** Concurrent requests per API key; null = unlimited. */
  maxConcurrent: z.number().int().positive().max(MAX_CONCURRENT).nullable().default(null),
  /** fixed: per-minute windows aligned to the clock; sliding: the last 60 s; bucket: refills limit/60 per second. */
  quotaWindow: z.enum(['fixed', 'sliding', 'bucket']).default('fixed'),
  /**
   * Length of the quota window, ms: requestsPerMinute and tokensPerMinute are counted per
   * window of this length (a minute by default; some providers enforce per-minute limits over
   * 1–10 s windows). A change forgets the usage recorded so far.
   */
  quotaWindowMs: z.number().int().min(1_000).max(3_600_000).default(60_000),
  /** Tokens charged against tokensPerMinute: input at admission, output (if counted) when the response ends. */
  countedTokens: z.enum(['input', 'input+output']).default('input'),
  /** Real Gemini sends no Retry-After header on 429; set true to add one (OpenAI always has it). */
  geminiRetryAfterHeader: z.boolean().default(false),
  /** Probability of a 429 for a request that is within quota (providers throttle below the published quota). */
  throttleProbability: probability.default(0),
  /** Time to first token, ms. */
  timeToFirstTokenMs: boundedDistributionSchema(MAX_LATENCY_MS).default({ kind: 'lognormal', p50: 600, p99: 2500 }),
  /** Time per output token after the first, ms (sampled once per request). 800 tokens x 9 ms ≈ 7.2 s. */
  perOutputTokenMs: boundedDistributionSchema(MAX_PER_TOKEN_MS).default({ kind: 'fixed', value: 9 }),
  /** Output tokens per response (rounded, at least 1, capped by the request's max output tokens). */
  outputTokens: boundedDistributionSchema(MAX_OUTPUT_TOKENS).default({ kind: 'normal', mean: 800, stddev: 150 }),
  /** Output tokens per streamed chunk. */
  streamChunkTokens: z.number().int().positive().max(MAX_OUTPUT_TOKENS).default(40),
  faults: faultsSchema.default(faultsSchema.parse({})),
  /** When a request declares functions (tools) and its last turn is not a function result, answer with a call to each. */
  answerToolCalls: z.boolean().default(true),
  /** Models the mock answers for; any other model answers 404. */
  models: z
    .array(z.string().min(1).max(200))
    .min(1)
    .max(1000)
    .default([
      'gemini-2.5-flash',
      'gemini-2.5-pro',
      'gemini-2.5-flash-lite',
      'gemini-2.0-flash',
      'gemini-3-flash-preview',
      'gpt-4o-mini',
      'gpt-4o',
      'gpt-4.1-mini',
      'gpt-4.1',
    ]),
  /** Request bodies larger than this answer 413. */
  maxBodyBytes: z
    .number()
    .int()
    .positive()
    .max(MAX_BODY_BYTES)
    .default(8 * 1024 * 1024),
  /** Quota changes over time, e.g. [{ at: 60, set: { tokensPerMinute: 500000 } }]. */
  timeline: z.array(timelineStepSchema).max(10_000).default([]),
  /** Seeds output text, sampled latencies/token counts, throttling and faults. */
  seed: z.number().int().min(0).max(2 ** 32 - 1).default(1),
});

export type MockConfig = z.infer<typeof mockConfigSchema>;
export type MockConfigInput = z.input<typeof mockConfigSchema>;
/** What startMockProvider, PUT /admin/config and timeline steps take: any subset, faults field by field. */
export type MockConfigPatch = Partial<Omit<MockConfig, 'faults'>> & { faults?: Partial<FaultsConfig> };
export type TimelineStep = z.infer<typeof timelineStepSchema>;

/** Thrown when a configuration does not validate; the message names every bad field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  /** Dotted paths of the bad fields ('faults.stallMs', 'outputTokens.value', 'faults'), so a CLI can name its flag. */
  readonly fields: readonly string[];
  constructor(message: string, fields: readonly string[] = []) {
    super(message);
    this.fields = fields;
  }
}

/** "faults.http500Probability: Too big: expected number to be <=1; seed: ..." */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

/** Validates a full or partial configuration object and fills in defaults. */
export function parseConfig(input: unknown): MockConfig {
  const result = mockConfigSchema.safeParse(input ?? {});
  if (!result.success) {
    throw new ConfigError(`invalid mock-provider config: ${formatIssues(result.error)}`, result.error.issues.map((issue) => issue.path.join('.')));
  }
  const config = result.data;
  if (config.quotaScope === 'key') {
    const perModel = (['requestsPerMinute', 'tokensPerMinute'] as const).find((field) => typeof config[field] !== 'number');
    if (perModel) {
      throw new ConfigError(`invalid mock-provider config: ${perModel}: per-model values need quotaScope "model" (with quotaScope "key" every model shares one quota)`, [perModel]);
    }
  }
  validateTimeline(config);
  return config;
}

/** The per-minute limits of one model. */
export function modelLimits(config: Pick<MockConfig, 'requestsPerMinute' | 'tokensPerMinute'>, model: string): { requestsPerMinute: number; tokensPerMinute: number } {
  return {
    requestsPerMinute: limitForModel(config.requestsPerMinute, model, DEFAULT_REQUESTS_PER_MINUTE),
    tokensPerMinute: limitForModel(config.tokensPerMinute, model, DEFAULT_TOKENS_PER_MINUTE),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Merges a partial configuration over a full one: nested objects (faults) merge field by
 * field, arrays and scalars replace, null clears a nullable field. The result is validated.
 */
export function mergeConfig(base: MockConfig, patch: unknown): MockConfig {
  if (!isPlainObject(patch)) throw new ConfigError('invalid mock-provider config: (root): expected an object');
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    const current = merged[key];
    merged[key] = isPlainObject(current) && isPlainObject(value) && key === 'faults' ? { ...current, ...value } : value;
  }
  return parseConfig(merged);
}

/** Each timeline step's `set` must itself be a valid partial config (checked up front, not at its time). */
function validateTimeline(config: MockConfig): void {
  let current: MockConfig = { ...config, timeline: [] };
  config.timeline.forEach((step, index) => {
    if ('timeline' in step.set) {
      throw new ConfigError(`invalid mock-provider config: timeline.${index}.set.timeline: a step cannot set a timeline`, [`timeline.${index}.set.timeline`]);
    }
    try {
      current = mergeConfig(current, step.set);
    } catch (error) {
      const detail = error instanceof ConfigError ? error.message.replace('invalid mock-provider config: ', '') : String(error);
      throw new ConfigError(`invalid mock-provider config: timeline.${index}.set: ${detail}`, [`timeline.${index}.set`]);
    }
  });
}

/** The defaults (the worked example: 1,000 RPM, 1,000,000 TPM per model, calls of about 8 s). */
export const defaultConfig: MockConfig = parseConfig({});
