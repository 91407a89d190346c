// Options of `serve --agent FILE[#export]`: one zod schema whose limiter, provider and
// listener fields are the agent service's own (same defaults and bounds; the `serve`
// command gives them the same flags and env variables), plus the module to serve.
import { z } from 'zod';
import { DEFAULT_IMPORT_TIMEOUT_MS, MAX_IMPORT_TIMEOUT_MS } from '../agent-module.ts';
import { type AgentServiceOptions, agentServiceFields, checkLimiterOptions, checkServerLimits, LIMITER_OPTION_KEYS, SERVER_LIMIT_KEYS } from '../config.ts';

export const DEFAULT_MAX_SESSIONS = 1_000;
export const MAX_MAX_SESSIONS = 1_000_000;
/** 15 minutes. */
export const DEFAULT_SESSION_IDLE_MS = 900_000;
export const MIN_SESSION_IDLE_MS = 1_000;
export const MAX_SESSION_IDLE_MS = 7 * 24 * 3_600_000;

/** App names as ADK spells them: letters, digits, `_` and `-`. */
export const APP_NAME_PATTERN = /^[A-Za-z_][\w-]*$/;

/** The agent service's fields serve takes (the sample-tree ones, model and tool delay, do not apply). */
export const SERVE_SHARED_KEYS = [
  'port',
  'host',
  'providerUrl',
  'apiKey',
  'httpTimeoutMs',
  'streaming',
  'accessLog',
  ...LIMITER_OPTION_KEYS,
  ...SERVER_LIMIT_KEYS,
] as const satisfies readonly (keyof AgentServiceOptions)[];

export const serveOptionsSchema = agentServiceFields
  .pick(Object.fromEntries(SERVE_SHARED_KEYS.map((key) => [key, true])) as { [K in (typeof SERVE_SHARED_KEYS)[number]]: true })
  .extend({
    /** The module and export to serve: `FILE[#export]`, export `rootAgent` by default. */
    agent: z.string().min(1, 'required: FILE[#export]').max(4096),
    /** The app name of /list-apps and of /v1/agents/{app}/run; default: the module's name, as ADK's loader gives it. */
    appName: z.string().max(128).regex(APP_NAME_PATTERN, 'letters, digits, _ and - only, not starting with a digit or -').optional(),
    /** false: leave every model as the module built it (no limiter). */
    wrap: z.boolean().default(true),
    /** Importing the module may take this long, ms (a top-level await that never settles ends here). */
    importTimeoutMs: z.int().min(100).max(MAX_IMPORT_TIMEOUT_MS).default(DEFAULT_IMPORT_TIMEOUT_MS),
    /** ADK sessions kept; one more evicts the session idle longest. */
    maxSessions: z.int().min(1).max(MAX_MAX_SESSIONS).default(DEFAULT_MAX_SESSIONS),
    /** A session unused this long is evicted, ms. */
    sessionIdleMs: z.int().min(MIN_SESSION_IDLE_MS).max(MAX_SESSION_IDLE_MS).default(DEFAULT_SESSION_IDLE_MS),
  })
  .superRefine((options, ctx) => {
    checkLimiterOptions(options, ctx);
    checkServerLimits(options, ctx);
  });

export type ServeOptions = z.infer<typeof serveOptionsSchema>;
export type ServeOptionsInput = z.input<typeof serveOptionsSchema>;
