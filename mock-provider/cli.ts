// `npm run mock-provider -- [flags]`: starts the mock provider. Configuration comes from a
// YAML/JSON file (--config), then MOCK_PROVIDER_* environment variables, then flags; later
// sources win. Run with --help for every flag.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { ConfigError, type Distribution, defaultConfig, type MockConfig, mergeConfig, type ServerLimits, serverLimitsSchema } from './config.ts';
import { DEFAULT_HOST, DEFAULT_PORT, startMockProvider } from './server.ts';

type Patch = Record<string, unknown>;

interface Setting {
  readonly flag: string;
  readonly help: string;
  /** Applies the text value to a partial config (or to the listen options). */
  readonly apply: (value: string, patch: Patch, listen: ListenOptions) => void;
  readonly boolean?: boolean;
}

interface ListenOptions {
  port: number;
  host: string;
  config?: string;
  adminToken?: string;
  limits: Partial<ServerLimits>;
}

class UsageError extends Error {}

function integer(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new UsageError(`--${flag}: expected an integer, got ${JSON.stringify(value)}`);
  return n;
}

function number(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${flag}: expected a number, got ${JSON.stringify(value)}`);
  return n;
}

function integerOrOff(flag: string, value: string): number | null {
  return value === 'off' ? null : integer(flag, value);
}

/** "fixed:500", "uniform:100,300", "normal:800,150", "lognormal:600,2500" (p50,p99), or JSON. */
export function parseDistribution(flag: string, value: string): Distribution {
  if (value.trim().startsWith('{')) return JSON.parse(value) as Distribution;
  const [kind, args = ''] = value.split(':');
  const n = args.split(',').map((part) => number(flag, part));
  const need = (count: number) => {
    if (n.length !== count) throw new UsageError(`--${flag}: ${kind} takes ${count} number(s), got ${JSON.stringify(value)}`);
  };
  switch (kind) {
    case 'fixed':
      need(1);
      return { kind, value: n[0] };
    case 'uniform':
      need(2);
      return { kind, min: n[0], max: n[1] };
    case 'normal':
      need(2);
      return { kind, mean: n[0], stddev: n[1] };
    case 'lognormal':
      need(2);
      return { kind, p50: n[0], p99: n[1] };
    default:
      throw new UsageError(`--${flag}: unknown distribution ${JSON.stringify(kind)} (fixed, uniform, normal, lognormal)`);
  }
}

const field =
  (key: string, parse: (value: string) => unknown) =>
  (value: string, patch: Patch): void => {
    patch[key] = parse(value);
  };

const listenField =
  <K extends keyof ListenOptions>(key: K, parse: (value: string) => ListenOptions[K]) =>
  (value: string, _patch: Patch, listen: ListenOptions): void => {
    listen[key] = parse(value);
  };

const limit =
  (flag: string, key: keyof ServerLimits) =>
  (value: string, _patch: Patch, listen: ListenOptions): void => {
    listen.limits = { ...listen.limits, [key]: integer(flag, value) };
  };

const fault = (patch: Patch, key: string, value: unknown) => {
  patch.faults = { ...((patch.faults as Patch | undefined) ?? {}), [key]: value };
};

const SETTINGS: readonly Setting[] = [
  { flag: 'port', help: `listen port (default ${DEFAULT_PORT}; 0 = any free port)`, apply: listenField('port', (v) => integer('port', v)) },
  { flag: 'host', help: `listen address (default ${DEFAULT_HOST}; 0.0.0.0 in a container)`, apply: listenField('host', (v) => v) },
  { flag: 'config', help: 'configuration file, YAML or JSON (fields as in GET /admin/config)', apply: listenField('config', (v) => v) },
  {
    flag: 'admin-token',
    help: 'require this token (Authorization: Bearer) on /admin/* from any address; without it /admin answers loopback only. Prefer the env variable',
    apply: listenField('adminToken', (v) => v),
  },
  { flag: 'headers-timeout-ms', help: 'longest a client may take to send headers (default 10000)', apply: limit('headers-timeout-ms', 'headersTimeoutMs') },
  { flag: 'request-timeout-ms', help: 'longest a client may take to send a whole request (default 30000)', apply: limit('request-timeout-ms', 'requestTimeoutMs') },
  { flag: 'keep-alive-timeout-ms', help: 'idle keep-alive connections close after this (default 5000)', apply: limit('keep-alive-timeout-ms', 'keepAliveTimeoutMs') },
  { flag: 'max-connections', help: 'open connections accepted at once (default 4096)', apply: limit('max-connections', 'maxConnections') },
  { flag: 'seed', help: 'seed for output text, sampling, throttling and faults (default 1)', apply: field('seed', (v) => integer('seed', v)) },
  { flag: 'requests-per-minute', help: 'requests/min per API key (default 1000)', apply: field('requestsPerMinute', (v) => integer('requests-per-minute', v)) },
  { flag: 'tokens-per-minute', help: 'tokens/min per API key (default 1000000)', apply: field('tokensPerMinute', (v) => integer('tokens-per-minute', v)) },
  { flag: 'requests-per-day', help: "requests/day per API key, or 'off' (default off)", apply: field('requestsPerDay', (v) => integerOrOff('requests-per-day', v)) },
  { flag: 'max-concurrent', help: "concurrent requests per API key, or 'off' (default off)", apply: field('maxConcurrent', (v) => integerOrOff('max-concurrent', v)) },
  { flag: 'quota-window', help: 'fixed | sliding | bucket (default fixed)', apply: field('quotaWindow', (v) => v) },
  { flag: 'quota-window-ms', help: 'length of the quota window, ms: the per-minute quotas count per window this long (default 60000)', apply: field('quotaWindowMs', (v) => integer('quota-window-ms', v)) },
  { flag: 'counted-tokens', help: 'tokens charged to tokens/min: input | input+output (default input)', apply: field('countedTokens', (v) => v) },
  {
    flag: 'throttle-probability',
    help: 'probability of a 429 for a request within quota (default 0)',
    apply: field('throttleProbability', (v) => number('throttle-probability', v)),
  },
  {
    flag: 'gemini-retry-after-header',
    help: 'add Retry-After to Gemini 429s (real Gemini sends none)',
    boolean: true,
    apply: field('geminiRetryAfterHeader', (v) => v !== 'false'),
  },
  {
    flag: 'ttft',
    help: 'time to first token, ms: fixed:N | uniform:MIN,MAX | normal:MEAN,SD | lognormal:P50,P99 (default lognormal:600,2500)',
    apply: field('timeToFirstTokenMs', (v) => parseDistribution('ttft', v)),
  },
  { flag: 'per-token-ms', help: 'time per output token, ms, a distribution (default fixed:9)', apply: field('perOutputTokenMs', (v) => parseDistribution('per-token-ms', v)) },
  { flag: 'output-tokens', help: 'output tokens per response, a distribution (default normal:800,150)', apply: field('outputTokens', (v) => parseDistribution('output-tokens', v)) },
  { flag: 'stream-chunk-tokens', help: 'output tokens per streamed chunk (default 40)', apply: field('streamChunkTokens', (v) => integer('stream-chunk-tokens', v)) },
  { flag: 'fault-http-500', help: 'probability of an HTTP 500 (default 0)', apply: (v, p) => fault(p, 'http500Probability', number('fault-http-500', v)) },
  { flag: 'fault-http-503', help: 'probability of an HTTP 503 (default 0)', apply: (v, p) => fault(p, 'http503Probability', number('fault-http-503', v)) },
  {
    flag: 'fault-stream-error',
    help: 'probability that a stream sends an error event after --fault-stream-error-after chunks (default 0)',
    apply: (v, p) => fault(p, 'streamErrorProbability', number('fault-stream-error', v)),
  },
  { flag: 'fault-stream-error-after', help: 'chunks before the stream error (default 1)', apply: (v, p) => fault(p, 'streamErrorAfterChunks', integer('fault-stream-error-after', v)) },
  { flag: 'fault-connection-reset', help: 'probability of a connection reset mid-response (default 0)', apply: (v, p) => fault(p, 'connectionResetProbability', number('fault-connection-reset', v)) },
  { flag: 'fault-stall', help: 'probability of a stalled response (default 0)', apply: (v, p) => fault(p, 'stallProbability', number('fault-stall', v)) },
  { flag: 'fault-stall-ms', help: 'how long a stall lasts before the connection is dropped (default 600000)', apply: (v, p) => fault(p, 'stallMs', integer('fault-stall-ms', v)) },
  { flag: 'models', help: 'comma-separated model names the mock answers (default: common Gemini and GPT models)', apply: field('models', (v) => v.split(',').map((m) => m.trim())) },
  { flag: 'max-body-bytes', help: 'larger request bodies answer 413 (default 8388608)', apply: field('maxBodyBytes', (v) => integer('max-body-bytes', v)) },
  { flag: 'no-tool-calls', help: 'answer text even when the request declares functions', boolean: true, apply: field('answerToolCalls', (v) => v === 'false') },
];

const envName = (flag: string) => `MOCK_PROVIDER_${flag.toUpperCase().replaceAll('-', '_')}`;

export function helpText(): string {
  const width = Math.max(...SETTINGS.map((s) => s.flag.length + (s.boolean ? 0 : 8)));
  const lines = SETTINGS.map((s) => {
    const left = `--${s.flag}${s.boolean ? '' : ' <value>'}`;
    return `  ${left.padEnd(width + 4)} ${s.help}\n  ${''.padEnd(width + 4)} env ${envName(s.flag)}`;
  });
  return [
    'quotascope mock provider: Gemini- and OpenAI-compatible LLM server with provider-like quotas.',
    '',
    'usage: npm run mock-provider -- [flags]',
    '',
    'Sources, later ones winning: --config file (YAML or JSON) < MOCK_PROVIDER_* env < flags.',
    'Timeline steps (a quota incident to replay) are set in the config file or with PUT /admin/config.',
    '',
    ...lines,
    `  --help${''.padEnd(width - 2)} this text`,
    '',
    'Endpoints: POST /{v1,v1beta}/models/{model}:generateContent | :streamGenerateContent?alt=sse | :countTokens,',
    '           POST /v1/chat/completions, GET/PUT /admin/config, POST /admin/reset, GET /metrics, GET /healthz',
  ].join('\n');
}

function readConfigFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`--config: cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new UsageError(`--config: ${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message}`);
  }
}

/** Dotted paths a patch sets: { faults: { stallMs } } → ['faults.stallMs']. */
function fieldPaths(patch: Patch): string[] {
  return Object.entries(patch).flatMap(([key, value]) =>
    key === 'faults' && typeof value === 'object' && value !== null ? Object.keys(value).map((inner) => `${key}.${inner}`) : [key],
  );
}

/** The flags (or env variables) that set the bad fields, else the layer's name (the config file). */
function namedSources(layer: string, fields: readonly string[], origins: readonly [string, string[]][]): string {
  const related = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
  const fromFlags = layer === 'flags';
  const names = origins
    .filter(([name]) => name.startsWith('--') === fromFlags)
    .filter(([, paths]) => paths.some((path) => fields.some((field) => related(path, field))))
    .map(([name]) => name);
  return layer === 'flags' || layer === 'environment' ? (names.length > 0 ? names.join(', ') : layer) : layer;
}

/** Resolves file < env < flags into a validated config and listen options. */
export function resolveSettings(argv: string[], env: NodeJS.ProcessEnv): { config: MockConfig; listen: ListenOptions; help: boolean } {
  const options = Object.fromEntries([
    ...SETTINGS.map((s) => [s.flag, { type: s.boolean ? ('boolean' as const) : ('string' as const) }]),
    ['help', { type: 'boolean' as const, short: 'h' }],
  ]);
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as typeof values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const listen: ListenOptions = { port: DEFAULT_PORT, host: DEFAULT_HOST, limits: {} };
  const envPatch: Patch = {};
  const flagPatch: Patch = {};
  /** Which config fields each env variable and flag set: a bad field's error names its source. */
  const origins: [string, string[]][] = [];
  const applyFrom = (name: string, setting: Setting, value: string, patch: Patch) => {
    setting.apply(value, patch, listen);
    const own: Patch = {};
    setting.apply(value, own, { ...listen });
    origins.push([name, fieldPaths(own)]);
  };
  for (const setting of SETTINGS) {
    const fromEnv = env[envName(setting.flag)];
    if (fromEnv === undefined || fromEnv === '') continue;
    try {
      applyFrom(envName(setting.flag), setting, setting.boolean ? String(fromEnv !== 'false' && fromEnv !== '0') : fromEnv, envPatch);
    } catch (error) {
      throw new UsageError(`${envName(setting.flag)}: ${(error as Error).message}`);
    }
  }
  for (const setting of SETTINGS) {
    const value = values[setting.flag];
    if (value !== undefined) applyFrom(`--${setting.flag}`, setting, String(value), flagPatch);
  }
  let config = defaultConfig;
  const layers: [string, unknown][] = [
    [`config file ${listen.config}`, listen.config === undefined ? {} : readConfigFile(listen.config)],
    ['environment', envPatch],
    ['flags', flagPatch],
  ];
  for (const [source, patch] of layers) {
    try {
      config = mergeConfig(config, patch ?? {});
    } catch (error) {
      if (error instanceof ConfigError) throw new UsageError(`${namedSources(source, error.fields, origins)}: ${error.message}`);
      throw error;
    }
  }
  const limits = serverLimitsSchema.safeParse(listen.limits);
  if (!limits.success) {
    // The limit fields are the flags in camelCase: headersTimeoutMs is --headers-timeout-ms.
    const flagOf = (key: PropertyKey) => `--${String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    throw new UsageError(limits.error.issues.map((issue) => `${flagOf(issue.path[0])}: ${issue.message}`).join('; '));
  }
  listen.limits = limits.data;
  return { config, listen, help: values.help === true };
}

async function main(): Promise<void> {
  let settings: ReturnType<typeof resolveSettings>;
  try {
    settings = resolveSettings(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError || error instanceof SyntaxError)) throw error;
    console.error(`mock-provider: ${error.message}\n(run with --help for the flags)`);
    process.exit(2);
  }
  if (settings.help) {
    console.log(helpText());
    return;
  }
  const { config, listen } = settings;
  const provider = await startMockProvider(config, { port: listen.port, host: listen.host, adminToken: listen.adminToken, limits: listen.limits });
  console.log(
    `mock-provider listening on ${provider.url} (${config.requestsPerMinute} RPM, ${config.tokensPerMinute} TPM, ` +
      `${config.quotaWindow} window, seed ${config.seed}; admin ${listen.adminToken ? 'token required' : 'loopback only'})`,
  );
  const stop = () => {
    provider.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.main) await main();
