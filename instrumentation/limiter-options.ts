// The limiter's options a user sets by hand, each defined once: its name (the key), bounds,
// default, unit and help. RateLimitedLlm validates its options with these fields, the agent
// service, `serve` and `start` schemas take them as they are, and the CLI flags read their
// help, placeholder and default from them (cli/flags.ts optionFlag).
import { z } from 'zod';
import { COUNTED_TOKEN_KINDS } from './counted-tokens.ts';
import {
  ADMISSION_MODES,
  DEFAULT_ADMISSION_MODE,
  DEFAULT_COUNTED_TOKENS,
  DEFAULT_EXPECTED_CALL_MS,
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_PERMITS,
  DEFAULT_REQUEST_DEADLINE_MS,
  MAX_EXPECTED_CALL_MS,
  MAX_PERMITS,
  MAX_REQUEST_DEADLINE_MS,
  MAX_WAIT_MS_LIMIT,
  MAX_WAITING_LIMIT,
  MIN_REQUEST_DEADLINE_MS,
} from './defaults.ts';

/** A refused options object in one line, each problem naming its field: `field: message; …`. */
export function optionProblems(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(options)'}: ${issue.message}`).join('; ');
}

/** `input` as `schema` parses it (defaults filled in); else a RangeError `<owner> options: field: problem; …`. */
export function parseOptions<T extends z.ZodType>(owner: string, schema: T, input: unknown): z.output<T> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new RangeError(`${owner} options: ${optionProblems(parsed.error)}`);
  return parsed.data;
}

/** What a user reads about an option: its help, the unit (or kind) of its value, and its default in words when the schema has none to show. */
export interface OptionHelp {
  readonly description: string;
  readonly unit: string;
  readonly defaultText?: string;
}

/** The schema with its help attached (zod metadata: the same instance travels through `.pick()` and `.shape`). */
function option<T extends z.ZodType>(schema: T, help: OptionHelp): T {
  return schema.meta({ ...help });
}

/** The help of an option field, or undefined for a schema made elsewhere. */
export function optionHelp(schema: z.ZodType): OptionHelp | undefined {
  const meta = schema.meta();
  return typeof meta?.description === 'string' && typeof meta.unit === 'string'
    ? { description: meta.description, unit: meta.unit, defaultText: typeof meta.defaultText === 'string' ? meta.defaultText : undefined }
    : undefined;
}

// Milliseconds are whole numbers in every layer: flags, env variables and the Helm chart's
// values take integers, and Node's timers count whole milliseconds.
export const limiterOptionFields = z.object({
  /** RateLimitedLlm's maxConcurrent. */
  permits: option(z.int().min(1).max(MAX_PERMITS).default(DEFAULT_PERMITS), { description: 'concurrent model calls per replica', unit: 'n' }),
  maxWaitMs: option(z.int().min(1).max(MAX_WAIT_MS_LIMIT).default(DEFAULT_MAX_WAIT_MS), { description: 'longest wait for a permit and budget, ms', unit: 'ms' }),
  maxWaiting: option(z.int().min(1).max(MAX_WAITING_LIMIT).optional(), {
    description: 'most calls waiting for a permit or budget; more are refused at once (queue_full)',
    unit: 'n',
    defaultText: 'no cap',
  }),
  countedTokens: option(z.enum(COUNTED_TOKEN_KINDS).default(DEFAULT_COUNTED_TOKENS), {
    description: "tokens the budget counts, as the provider's quota does (Gemini's TPM counts input)",
    unit: 'kind',
  }),
  admission: option(z.enum(ADMISSION_MODES).default(DEFAULT_ADMISSION_MODE), {
    description: 'request: fund each user request whole at the door or shed it whole (429 + Retry-After); call: admit each model call alone',
    unit: 'mode',
  }),
  /** Unset: DEFAULT_REQUEST_DEADLINE_MS, or twice the tree's critical path when that is longer. */
  requestDeadlineMs: option(z.int().min(MIN_REQUEST_DEADLINE_MS).max(MAX_REQUEST_DEADLINE_MS).optional(), {
    description: "a request's deadline from its arrival, ms: admitted only if it can be funded in time to finish",
    unit: 'ms',
    defaultText: `${DEFAULT_REQUEST_DEADLINE_MS}, or 2 x the tree's critical path when longer`,
  }),
  /** Unset: DEFAULT_EXPECTED_CALL_MS until calls are measured. */
  expectedCallMs: option(z.int().min(1).max(MAX_EXPECTED_CALL_MS).optional(), {
    description: "a model call's time before the limiter has measured one, ms: sizes a cold request's deadline to its tree's chain",
    unit: 'ms',
    defaultText: `${DEFAULT_EXPECTED_CALL_MS}, then what calls measured`,
  }),
});

export type LimiterOptionFields = z.infer<typeof limiterOptionFields>;
