// The mock provider's whole configuration: one zod schema (with defaults), the merge rule
// used by PUT /admin/config and timeline steps, and readable validation errors.
import { z } from 'zod';

/** A distribution to sample from. Units are those of the field that holds it (ms, tokens). */
export const distributionSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('fixed'), value: z.number().nonnegative() }),
  z
    .strictObject({ kind: z.literal('uniform'), min: z.number().nonnegative(), max: z.number().nonnegative() })
    .refine((d) => d.max >= d.min, { message: 'max must be >= min', path: ['max'] }),
  z.strictObject({ kind: z.literal('normal'), mean: z.number().nonnegative(), stddev: z.number().nonnegative() }),
  z
    .strictObject({ kind: z.literal('lognormal'), p50: z.number().positive(), p99: z.number().positive() })
    .refine((d) => d.p99 >= d.p50, { message: 'p99 must be >= p50', path: ['p99'] }),
]);
export type Distribution = z.infer<typeof distributionSchema>;

const probability = z.number().min(0).max(1);

export const faultsSchema = z.strictObject({
  /** Probability that a request answers HTTP 500 INTERNAL. */
  http500Probability: probability.default(0),
  /** Probability that a request answers HTTP 503 UNAVAILABLE. */
  http503Probability: probability.default(0),
  /** Probability that a streamed response sends an error event after `streamErrorAfterChunks` chunks. */
  streamErrorProbability: probability.default(0),
  streamErrorAfterChunks: z.number().int().nonnegative().default(1),
  /** Probability that the connection is reset (socket destroyed) mid-response. */
  connectionResetProbability: probability.default(0),
  /** Probability that a response stalls: a stream stops after its first chunk, a plain call never answers. */
  stallProbability: probability.default(0),
  /** How long a stall lasts before the server drops the connection. */
  stallMs: z.number().int().nonnegative().default(600_000),
});
export type FaultsConfig = z.infer<typeof faultsSchema>;

const timelineStepSchema = z.strictObject({
  /** Seconds after the timeline started (server start, reset, or the PUT that set the timeline). */
  at: z.number().nonnegative(),
  /** Partial configuration merged over the current one when the step is due. */
  set: z.record(z.string(), z.unknown()),
});

/** Every field has a default, so `{}` is a valid configuration (the worked example's quota). */
export const mockConfigSchema = z.strictObject({
  /** Requests per minute per API key. */
  requestsPerMinute: z.number().int().positive().default(1000),
  /** Tokens per minute per API key; which tokens count is `countedTokens`. */
  tokensPerMinute: z.number().int().positive().default(1_000_000),
  /** Requests per day per API key (fixed UTC day); null = no daily quota. */
  requestsPerDay: z.number().int().positive().nullable().default(null),
  /** Concurrent requests per API key; null = unlimited. */
  maxConcurrent: z.number().int().positive().nullable().default(null),
  /** fixed: per-minute windows aligned to the clock; sliding: the last 60 s; bucket: refills limit/60 per second. */
  quotaWindow: z.enum(['fixed', 'sliding', 'bucket']).default('fixed'),
  /** Tokens charged against tokensPerMinute: input at admission, output (if counted) when the response ends. */
  countedTokens: z.enum(['input', 'input+output']).default('input'),
  /** Real Gemini sends no Retry-After header on 429; set true to add one (OpenAI always has it). */
  geminiRetryAfterHeader: z.boolean().default(false),
  /** Probability of a 429 for a request that is within quota (providers throttle below the published quota). */
  throttleProbability: probability.default(0),
  /** Time to first token, ms. */
  timeToFirstTokenMs: distributionSchema.default({ kind: 'lognormal', p50: 600, p99: 2500 }),
  /** Time per output token after the first, ms (sampled once per request). 800 tokens x 9 ms ≈ 7.2 s. */
  perOutputTokenMs: distributionSchema.default({ kind: 'fixed', value: 9 }),
  /** Output tokens per response (rounded, at least 1, capped by the request's max output tokens). */
  outputTokens: distributionSchema.default({ kind: 'normal', mean: 800, stddev: 150 }),
  /** Output tokens per streamed chunk. */
  streamChunkTokens: z.number().int().positive().default(40),
  faults: faultsSchema.default(faultsSchema.parse({})),
  /** When a request declares functions (tools) and its last turn is not a function result, answer with a call to each. */
  answerToolCalls: z.boolean().default(true),
  /** Models the mock answers for; any other model answers 404. */
  models: z
    .array(z.string().min(1))
    .min(1)
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
    .default(8 * 1024 * 1024),
  /** Quota changes over time, e.g. [{ at: 60, set: { tokensPerMinute: 500000 } }]. */
  timeline: z.array(timelineStepSchema).default([]),
  /** Seeds output text, sampled latencies/token counts, throttling and faults. */
  seed: z.number().int().default(1),
});

export type MockConfig = z.infer<typeof mockConfigSchema>;
export type MockConfigInput = z.input<typeof mockConfigSchema>;
/** What startMockProvider, PUT /admin/config and timeline steps take: any subset, faults field by field. */
export type MockConfigPatch = Partial<Omit<MockConfig, 'faults'>> & { faults?: Partial<FaultsConfig> };
export type TimelineStep = z.infer<typeof timelineStepSchema>;

/** Thrown when a configuration does not validate; the message names every bad field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
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
  if (!result.success) throw new ConfigError(`invalid mock-provider config: ${formatIssues(result.error)}`);
  validateTimeline(result.data);
  return result.data;
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
    if ('timeline' in step.set) throw new ConfigError(`invalid mock-provider config: timeline.${index}.set.timeline: a step cannot set a timeline`);
    try {
      current = mergeConfig(current, step.set);
    } catch (error) {
      const detail = error instanceof ConfigError ? error.message.replace('invalid mock-provider config: ', '') : String(error);
      throw new ConfigError(`invalid mock-provider config: timeline.${index}.set: ${detail}`);
    }
  });
}

/** The defaults (the worked example: 1,000 RPM, 1,000,000 TPM, calls of about 8 s). */
export const defaultConfig: MockConfig = parseConfig({});
