// Options of `serve --agent FILE[#export]`: one zod schema whose limiter, provider and
// listener fields are the agent service's own (same defaults, bounds, flags and env
// variables), plus the module to serve. Flags over environment variables over defaults;
// every bad value fails with the flag or variable it came from.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  AgentConfigError,
  agentServiceFields,
  checkLimiterOptions,
  checkServerLimits,
  formatIssues,
  LIMITER_OPTION_KEYS,
  OPTION_SOURCES,
  type OptionKey,
  readOptionSources,
  SERVER_LIMIT_KEYS,
} from '../config.ts';

/** App names as ADK spells them: letters, digits, `_` and `-`. */
export const APP_NAME_PATTERN = /^[A-Za-z_][\w-]*$/;

/** The agent service's fields serve takes (the sample-tree ones, model and tool delay, do not apply). */
const SHARED_KEYS = [
  'port',
  'host',
  'providerUrl',
  'apiKey',
  'httpTimeoutMs',
  'streaming',
  'accessLog',
  ...LIMITER_OPTION_KEYS,
  ...SERVER_LIMIT_KEYS,
] as const satisfies readonly OptionKey[];

export const serveOptionsSchema = agentServiceFields
  .pick(Object.fromEntries(SHARED_KEYS.map((key) => [key, true])) as { [K in (typeof SHARED_KEYS)[number]]: true })
  .extend({
    /** The module and export to serve: `FILE[#export]`, export `rootAgent` by default. */
    agent: z.string().min(1, 'required: FILE[#export]').max(4096),
    /** The app name of /list-apps and of /v1/agents/{app}/run; default: the module's name, as ADK's loader gives it. */
    appName: z.string().max(128).regex(APP_NAME_PATTERN, 'letters, digits, _ and - only, not starting with a digit or -').optional(),
    /** false: leave every model as the module built it (no limiter). */
    wrap: z.boolean().default(true),
  })
  .superRefine((options, ctx) => {
    checkLimiterOptions(options, ctx);
    checkServerLimits(options, ctx);
  });

export type ServeOptions = z.infer<typeof serveOptionsSchema>;
export type ServeOptionsInput = z.input<typeof serveOptionsSchema>;

const OWN_FLAGS = { agent: 'agent', appName: 'app-name' } as const;

export const SERVE_USAGE = `usage: serve --agent FILE[#export] [flags]
  --agent FILE[#export]          TS or JS module exporting the root agent (a BaseAgent or a Workflow); export rootAgent by default
  --app-name NAME                app name for /list-apps and /v1/agents/NAME/run (default: the file's name, or its folder's for agent.ts)
  --no-wrap                      leave every model as it is (no limiter)
  --port N --host H              listener (AGENT_PORT, default 8080; AGENT_HOST, default 127.0.0.1)
  --provider-url URL             Gemini-compatible provider every wrapped model calls (PROVIDER_URL, default http://127.0.0.1:8090)
  --api-key KEY                  provider key (PROVIDER_API_KEY; prefer the env variable)
  --http-timeout-ms N            provider HTTP timeout (PROVIDER_TIMEOUT_MS, default 120000)
  --streaming true|false         SSE model calls on the native run endpoint (AGENT_STREAMING, default false)
  --access-log FILE|-            JSON-lines access log of native runs (AGENT_ACCESS_LOG)
  limiter, one per model name: --limiter-name --permits --tokens-per-minute --counted-tokens --quota-window-ms
  --replica-share --estimated-tokens-per-call
  --initial-output-tokens --max-wait-ms --max-waiting --quota-sharing --budget-window --redis-url --central-outage
  --adaptive-max-permits --adaptive-latency-ms --batch-max-permits, as for the agent service (see its --help)
  server: --headers-timeout-ms --request-timeout-ms --keep-alive-timeout-ms --max-connections --shutdown-grace-ms,
  as for the agent service
  --help`;

/** Flags over env over defaults. Throws AgentConfigError naming the flag or variable. */
export function parseServeArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServeOptions | 'help' {
  const flagOptions: Record<string, { type: 'string' | 'boolean' }> = {
    [OWN_FLAGS.agent]: { type: 'string' },
    [OWN_FLAGS.appName]: { type: 'string' },
    'no-wrap': { type: 'boolean' },
    help: { type: 'boolean' },
  };
  for (const key of SHARED_KEYS) flagOptions[OPTION_SOURCES[key].flag] = { type: 'string' };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: [...argv], options: flagOptions, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new AgentConfigError(`${(error as Error).message.split('\n')[0]} (see --help)`);
  }
  if (values.help) return 'help';
  const { raw, origin } = readOptionSources(values, env, SHARED_KEYS);
  for (const [key, flag] of Object.entries(OWN_FLAGS)) {
    if (typeof values[flag] === 'string') {
      raw[key] = values[flag];
      origin[key] = `--${flag}`;
    }
  }
  if (values['no-wrap'] === true) raw.wrap = false;
  const result = serveOptionsSchema.safeParse(raw);
  const sourceOf = (key: string) => {
    if (origin[key]) return origin[key];
    if (key in OWN_FLAGS) return `--${OWN_FLAGS[key as keyof typeof OWN_FLAGS]}`;
    const source = OPTION_SOURCES[key as OptionKey];
    return source ? `--${source.flag} (${source.env})` : key;
  };
  if (!result.success) throw new AgentConfigError(formatIssues(result.error, sourceOf));
  return result.data;
}
