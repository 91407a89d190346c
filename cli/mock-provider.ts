// `quotascope mock-provider`: starts the mock provider. Configuration comes from a YAML or
// JSON file (--config), then QUOTASCOPE_MOCK_PROVIDER_* environment variables (formerly
// MOCK_PROVIDER_*, still read), then flags; later sources win. Each flag's default and bounds are the config schema's.
import { Command } from 'commander';
import { z } from 'zod';
import { ConfigError, type Distribution, faultsSchema, type MockConfig, mockConfigSchema, type ServerLimits, serverLimitsSchema } from '../mock-provider/config.ts';
import { ConfigFileError, type ConfigLayer, layerConfig, readConfigFile, settingsLayer } from '../mock-provider/config-layers.ts';
import { DEFAULT_HOST, DEFAULT_PORT } from '../mock-provider/listen.ts';
import type { MockProvider } from '../mock-provider/server.ts';
import { decimalNumber } from './decimal-number.ts';
import { UsageError } from './errors.ts';
import { stopOnSignal } from '../shared/stop-signals.ts';
import { formatPerModel } from '../agent/per-model.ts';
import { FlagSet, type FlagSpec, parseFlags, perModelFlag, serverLimitFlags } from './flags.ts';

const config = mockConfigSchema.shape;
const faults = faultsSchema.shape;
const limits = serverLimitsSchema.shape;

/** "fixed:500", "uniform:100,300", "normal:800,150", "lognormal:600,2500" (p50,p99), or JSON. */
export function parseDistribution(value: string): Distribution {
  if (value.trim().startsWith('{')) {
    try {
      return JSON.parse(value) as Distribution;
    } catch (error) {
      throw new Error(`not valid JSON: ${(error as Error).message}`);
    }
  }
  const [kind, args = ''] = value.split(':');
  const n = args.split(',').map((part) => {
    const x = part.trim() === '' ? Number.NaN : Number(part);
    if (!Number.isFinite(x)) throw new Error(`expected numbers after "${kind}:", got ${JSON.stringify(value)}`);
    return x;
  });
  const need = (count: number) => {
    if (n.length !== count) throw new Error(`${kind} takes ${count} number(s), got ${JSON.stringify(value)}`);
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
      throw new Error(`unknown distribution ${JSON.stringify(kind)} (fixed, uniform, normal, lognormal, or JSON)`);
  }
}

/** The flag text of a distribution: the inverse of parseDistribution. */
export function formatDistribution(d: Distribution): string {
  switch (d.kind) {
    case 'fixed':
      return `fixed:${d.value}`;
    case 'uniform':
      return `uniform:${d.min},${d.max}`;
    case 'normal':
      return `normal:${d.mean},${d.stddev}`;
    case 'lognormal':
      return `lognormal:${d.p50},${d.p99}`;
  }
}

const DISTRIBUTION_HELP = 'fixed:N | uniform:MIN,MAX | normal:MEAN,SD | lognormal:P50,P99 | JSON';
const distribution = (flag: string, help: string, schema: z.ZodType): FlagSpec => ({
  flag,
  help: `${help}: ${DISTRIBUTION_HELP}`,
  schema,
  value: 'dist',
  parse: parseDistribution,
  defaultText: (d) => formatDistribution(d as Distribution),
});
const offOrNumber = (text: string): unknown => (text === 'off' ? null : Number.isFinite(decimalNumber(text)) ? decimalNumber(text) : text);

/** Config fields by flag; `path` is where the value goes in the config (listen options have none). */
const SPECS = {
  port: { flag: 'port', help: 'listen port (0 = any free port)', schema: z.int().min(0).max(65_535).default(DEFAULT_PORT), value: 'port' },
  host: { flag: 'host', help: 'listen address (0.0.0.0 in a container)', schema: z.string().min(1).default(DEFAULT_HOST), value: 'address' },
  config: { flag: 'config', help: 'configuration file, YAML or JSON (fields as in GET /admin/config)', schema: z.string().min(1).optional(), value: 'file' },
  adminToken: {
    flag: 'admin-token',
    help: 'require this bearer token on /admin/* from any address (without it /admin answers loopback only); prefer the env variable',
    schema: z.string().min(1).optional(),
    value: 'token',
  },
  ...serverLimitFlags(limits),
  seed: { flag: 'seed', help: 'seed for output text, sampling, throttling and faults', schema: config.seed, value: 'n' },
  quotaScope: { flag: 'quota-scope', help: "who shares a quota: each API key's every model apart (model, as Gemini counts), or all of a key's models together (key)", schema: config.quotaScope, value: 'scope' },
  requestsPerMinute: perModelFlag('requests-per-minute', 'requests/min per quota scope: N for every model, or MODEL=N,MODEL=N (N,MODEL=N: N for the others)', config.requestsPerMinute),
  tokensPerMinute: perModelFlag('tokens-per-minute', 'tokens/min per quota scope: N for every model, or MODEL=N,MODEL=N (N,MODEL=N: N for the others)', config.tokensPerMinute),
  requestsPerDay: { flag: 'requests-per-day', help: "requests/day per quota scope, or 'off'", schema: config.requestsPerDay, value: 'n|off', parse: offOrNumber },
  maxConcurrent: { flag: 'max-concurrent', help: "concurrent requests per quota scope, or 'off'", schema: config.maxConcurrent, value: 'n|off', parse: offOrNumber },
  quotaWindow: { flag: 'quota-window', help: 'quota window', schema: config.quotaWindow, value: 'kind' },
  quotaWindowMs: { flag: 'quota-window-ms', help: 'length of the quota window, ms: the per-minute quotas count per window this long', schema: config.quotaWindowMs, value: 'ms' },
  countedTokens: { flag: 'counted-tokens', help: 'tokens charged to tokens/min', schema: config.countedTokens, value: 'which' },
  throttleProbability: { flag: 'throttle-probability', help: 'probability of a 429 for a request within quota', schema: config.throttleProbability, value: 'p' },
  geminiRetryAfterHeader: { flag: 'gemini-retry-after-header', help: 'add Retry-After to Gemini 429s (real Gemini sends none)', schema: config.geminiRetryAfterHeader, switch: true },
  timeToFirstTokenMs: distribution('ttft', 'time to first token, ms', config.timeToFirstTokenMs),
  perOutputTokenMs: distribution('per-token-ms', 'time per output token, ms', config.perOutputTokenMs),
  outputTokens: distribution('output-tokens', 'output tokens per response', config.outputTokens),
  streamChunkTokens: { flag: 'stream-chunk-tokens', help: 'output tokens per streamed chunk', schema: config.streamChunkTokens, value: 'n' },
  'faults.http500Probability': { flag: 'fault-http-500', help: 'probability of an HTTP 500', schema: faults.http500Probability, value: 'p' },
  'faults.http503Probability': { flag: 'fault-http-503', help: 'probability of an HTTP 503', schema: faults.http503Probability, value: 'p' },
  'faults.streamErrorProbability': {
    flag: 'fault-stream-error',
    help: 'probability that a stream sends an error event after --fault-stream-error-after chunks',
    schema: faults.streamErrorProbability,
    value: 'p',
  },
  'faults.streamErrorAfterChunks': { flag: 'fault-stream-error-after', help: 'chunks before the stream error', schema: faults.streamErrorAfterChunks, value: 'n' },
  'faults.connectionResetProbability': { flag: 'fault-connection-reset', help: 'probability of a connection reset mid-response', schema: faults.connectionResetProbability, value: 'p' },
  'faults.stallProbability': { flag: 'fault-stall', help: 'probability of a stalled response', schema: faults.stallProbability, value: 'p' },
  'faults.stallMs': { flag: 'fault-stall-ms', help: 'how long a stall lasts before the connection is dropped, ms', schema: faults.stallMs, value: 'ms' },
  models: { flag: 'models', help: 'comma-separated model names the mock answers', schema: config.models, value: 'names', parse: (v: string) => v.split(',').map((m) => m.trim()) },
  maxBodyBytes: { flag: 'max-body-bytes', help: 'larger request bodies answer 413', schema: config.maxBodyBytes, value: 'bytes' },
  answerToolCalls: { flag: 'tool-calls', help: 'answer with function calls when the request declares functions (false: always text)', schema: config.answerToolCalls, switch: true },
} as const satisfies Record<string, FlagSpec>;

type Key = keyof typeof SPECS;
const LIMIT_KEYS = ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxConnections'] as const satisfies readonly (Key & keyof ServerLimits)[];
/** Keys that are not config fields: where and how the server listens. */
const LISTEN_KEYS = ['port', 'host', 'config', 'adminToken', ...LIMIT_KEYS] as const satisfies readonly Key[];
const isListenKey = (key: Key): key is (typeof LISTEN_KEYS)[number] => (LISTEN_KEYS as readonly Key[]).includes(key);

const FORMER_ENV_PREFIX = 'MOCK_PROVIDER_';

export interface ListenOptions {
  readonly port: number;
  readonly host: string;
  readonly config?: string;
  readonly adminToken?: string;
  readonly limits: ServerLimits;
}

export interface MockSettings {
  readonly config: MockConfig;
  readonly listen: ListenOptions;
}

function defineFlags(command: Command): FlagSet<Key> {
  // A config field's error names the flag (or env variable) and the field.
  return new FlagSet(command, SPECS, { formerEnvPrefix: FORMER_ENV_PREFIX, errorPrefix: (key, origin) => (isListenKey(key as Key) ? origin : `${origin}: ${key}`) });
}

/** The --config file as the first layer over the defaults (a UsageError when it cannot be read). */
function fileLayer(path: string | undefined): ConfigLayer {
  if (path === undefined) return { name: 'config file', patch: {} };
  try {
    return { name: `config file ${path}`, patch: readConfigFile(path) };
  } catch (error) {
    if (error instanceof ConfigFileError) throw new UsageError(`--config: ${error.message}`);
    throw error;
  }
}

function settingsFrom(flags: FlagSet<Key>): MockSettings {
  const values = flags.values();
  const givenLimits = Object.fromEntries(LIMIT_KEYS.filter((key) => flags.isGiven(key)).map((key) => [key, values[key]]));
  const parsedLimits = serverLimitsSchema.safeParse(givenLimits);
  if (!parsedLimits.success) throw new UsageError(flags.describe(parsedLimits.error));
  const listen: ListenOptions = {
    port: values.port as number,
    host: values.host as string,
    config: values.config as string | undefined,
    adminToken: values.adminToken as string | undefined,
    limits: parsedLimits.data,
  };
  const given = (Object.entries(flags.given()) as [Key, unknown][]).filter(([key]) => !isListenKey(key)).map(([key, value]) => [key, value, flags.nameOf(key)] as const);
  try {
    const config = layerConfig([
      fileLayer(listen.config),
      settingsLayer('environment', given.filter(([, , name]) => !name.startsWith('--'))),
      settingsLayer('flags', given.filter(([, , name]) => name.startsWith('--'))),
    ]);
    return { config, listen };
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
}

/** Resolves file < env < flags into a validated config and listen options (throws UsageError). */
export function resolveSettings(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): MockSettings {
  const command = new Command('mock-provider');
  const flags = defineFlags(command);
  parseFlags(command, argv, env);
  return settingsFrom(flags);
}

/** The start line: the address really bound (0.0.0.0 stays 0.0.0.0), and the URL to reach it when that differs. */
export function startLine(provider: Pick<MockProvider, 'host' | 'port' | 'url'>, config: MockConfig, adminToken: string | undefined): string {
  const bound = `http://${provider.host.includes(':') ? `[${provider.host}]` : provider.host}:${provider.port}`;
  return (
    `mock-provider listening on ${bound}${provider.url === bound ? '' : ` (base URL ${provider.url})`} ` +
    `(${formatPerModel(config.requestsPerMinute)} RPM, ${formatPerModel(config.tokensPerMinute)} TPM per ${config.quotaScope === 'model' ? 'key and model' : 'key'}, ` +
    `${config.quotaWindow} window, seed ${config.seed}; admin ${adminToken ? 'token required' : 'loopback only'})`
  );
}

async function serve(settings: MockSettings): Promise<void> {
  const { config, listen } = settings;
  const { startMockProvider } = await import('../mock-provider/server.ts');
  const provider = await startMockProvider(config, { port: listen.port, host: listen.host, adminToken: listen.adminToken, limits: listen.limits });
  console.log(startLine(provider, config, listen.adminToken));
  stopOnSignal(() => provider.close());
}

export function mockProviderCommand(): Command {
  const command = new Command('mock-provider')
    .description('Gemini- and OpenAI-compatible LLM server with provider-like quotas, latency and faults')
    .addHelpText(
      'after',
      [
        '',
        'Sources, later ones winning: --config file (YAML or JSON) < QUOTASCOPE_MOCK_PROVIDER_* env (formerly MOCK_PROVIDER_*) < flags.',
        'Timeline steps (a quota incident to replay) are set in the config file or with PUT /admin/config.',
        'Endpoints: POST /{v1,v1beta}/models/{model}:generateContent | :streamGenerateContent?alt=sse | :countTokens,',
        '           POST /v1/chat/completions, GET/PUT /admin/config, POST /admin/reset, GET /metrics, GET /healthz',
      ].join('\n'),
    );
  const flags = defineFlags(command);
  command.action(() => serve(settingsFrom(flags)));
  return command;
}
