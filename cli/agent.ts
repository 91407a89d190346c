// `quotascope agent`: starts N independent agent service replicas on consecutive ports and
// serves until SIGINT/SIGTERM. Flags over env over the service schema's defaults.
import { Command } from 'commander';
import { z } from 'zod';
import { type AccessLog, AccessLogError, openAccessLog } from '../agent/access-log.ts';
import { AgentConfigError, type AgentServiceOptions, agentServiceFields, agentServiceOptionsSchema, modelLimiterOptions } from '../agent/config.ts';
import type { AgentService } from '../agent/service.ts';
import { redactUrl } from '../instrumentation/redact-url.ts';
import { UsageError } from './errors.ts';
import { stopOnSignal } from '../shared/stop-signals.ts';
import { FlagSet, type FlagSpec, optionFlag, parseFlags, perModelFlag, serverLimitFlags } from './flags.ts';

const field = agentServiceFields.shape;

/** Every service option's flag and env variable; the schema gives the default and the bounds (and the limiter options' help). */
export const SERVICE_FLAGS = {
  port: { flag: 'port', formerEnv: 'AGENT_PORT', help: "first replica's port (0 = any free port)", schema: field.port, value: 'port' },
  host: { flag: 'host', formerEnv: 'AGENT_HOST', help: 'bind address (0.0.0.0 in a container)', schema: field.host, value: 'address' },
  providerUrl: { flag: 'provider-url', formerEnv: 'PROVIDER_URL', help: 'Gemini-compatible provider', schema: field.providerUrl, value: 'url' },
  apiKey: { flag: 'api-key', formerEnv: 'PROVIDER_API_KEY', help: 'provider key (prefer the env variable; never printed)', schema: field.apiKey, value: 'key', defaultText: 'a placeholder the mock accepts' },
  model: { flag: 'model', formerEnv: 'AGENT_MODEL', help: 'model name', schema: field.model, value: 'name' },
  limiterName: { flag: 'limiter-name', formerEnv: 'LIMITER_NAME', help: 'limiter label of the llm_limiter_* metrics', schema: field.limiterName, value: 'name' },
  permits: optionFlag('permits', field.permits, { formerEnv: 'LIMITER_PERMITS' }),
  tokensPerMinute: {
    ...perModelFlag(
      'tokens-per-minute',
      "token budget of the whole fleet per quota window: N for every model, or MODEL=N,MODEL=N (N,MODEL=N: N for the others); each model's limiter takes its own",
      field.tokensPerMinute,
    ),
    formerEnv: 'LIMITER_TOKENS_PER_MINUTE',
  },
  quotaScope: {
    flag: 'quota-scope',
    formerEnv: 'LIMITER_QUOTA_SCOPE',
    help: "the provider quota's scope: model (each model its own quota and budget, as Gemini counts) or key (every model shares one budget)",
    schema: field.quotaScope,
    value: 'scope',
  },
  countedTokens: optionFlag('countedTokens', field.countedTokens, { formerEnv: 'LIMITER_COUNTED_TOKENS' }),
  quotaWindowMs: { flag: 'quota-window-ms', formerEnv: 'LIMITER_QUOTA_WINDOW_MS', help: "the provider quota's window, ms", schema: field.quotaWindowMs, value: 'ms' },
  replicaShare: {
    flag: 'replica-share',
    formerEnv: 'LIMITER_REPLICA_SHARE',
    help: 'share of the budget each replica may spend',
    schema: field.replicaShare,
    value: 'fraction',
    defaultText: '1/replicas',
  },
  estimatedTokensPerCall: {
    flag: 'estimated-tokens-per-call',
    formerEnv: 'LIMITER_ESTIMATED_TOKENS_PER_CALL',
    help: 'fixed up-front reservation per call',
    schema: field.estimatedTokensPerCall,
    value: 'n',
    defaultText: 'input tokens + learned output',
  },
  initialOutputTokens: { flag: 'initial-output-tokens', formerEnv: 'LIMITER_INITIAL_OUTPUT_TOKENS', help: 'output tokens assumed before usage is seen', schema: field.initialOutputTokens, value: 'n' },
  maxWaitMs: optionFlag('maxWaitMs', field.maxWaitMs, { formerEnv: 'LIMITER_MAX_WAIT_MS' }),
  admission: optionFlag('admission', field.admission, { formerEnv: 'AGENT_ADMISSION' }),
  requestDeadlineMs: optionFlag('requestDeadlineMs', field.requestDeadlineMs, { formerEnv: 'AGENT_REQUEST_DEADLINE_MS' }),
  expectedCallMs: optionFlag('expectedCallMs', field.expectedCallMs, { formerEnv: 'LIMITER_EXPECTED_CALL_MS' }),
  expectedTokensPerCall: {
    ...perModelFlag(
      'expected-tokens-per-call',
      'counted tokens per call a limiter expects before it has measured one (a calibration, or a declared maximum): N, or MODEL=N,…; a cold burst is funded whole from it',
      field.expectedTokensPerCall,
    ),
    formerEnv: 'LIMITER_EXPECTED_TOKENS_PER_CALL',
    defaultText: 'none: one request learns the cost',
  },
  httpTimeoutMs: { flag: 'http-timeout-ms', formerEnv: 'PROVIDER_TIMEOUT_MS', help: 'HTTP timeout of one provider request, ms', schema: field.httpTimeoutMs, value: 'ms' },
  toolDelayMs: { flag: 'tool-delay-ms', formerEnv: 'TOOL_DELAY_MS', help: "the tools tree's slow tool, ms", schema: field.toolDelayMs, value: 'ms' },
  streaming: { flag: 'streaming', formerEnv: 'AGENT_STREAMING', help: 'SSE model calls', schema: field.streaming, switch: true },
  accessLog: { flag: 'access-log', formerEnv: 'AGENT_ACCESS_LOG', help: 'JSON-lines access log, appended; - = stdout', schema: field.accessLog, value: 'file|-', defaultText: 'off' },
  quotaSharing: { flag: 'quota-sharing', formerEnv: 'AGENT_QUOTA_SHARING', help: 'how replicas share the provider quota', schema: field.quotaSharing, value: 'mode' },
  budgetWindow: {
    flag: 'budget-window',
    formerEnv: 'AGENT_BUDGET_WINDOW',
    help: 'token budget guard: rolling also caps every rolling 60 s at the budget, as per-minute provider quotas count',
    schema: field.budgetWindow,
    value: 'mode',
  },
  redisUrl: { flag: 'redis-url', formerEnv: 'REDIS_URL', help: 'Redis of the shared token bucket, for --quota-sharing central', schema: field.redisUrl, value: 'url' },
  centralOutage: {
    flag: 'central-outage',
    formerEnv: 'AGENT_CENTRAL_OUTAGE',
    help: 'central, Redis unreachable: fail-open (the static share) or fail-closed (calls refused with BUDGET_UNAVAILABLE)',
    schema: field.centralOutage,
    value: 'policy',
  },
  maxWaiting: optionFlag('maxWaiting', field.maxWaiting, { formerEnv: 'LIMITER_MAX_WAITING' }),
  adaptiveMaxPermits: {
    flag: 'adaptive-max-permits',
    formerEnv: 'LIMITER_ADAPTIVE_MAX_PERMITS',
    help: 'adaptive: most permits AIMD may grow to',
    schema: field.adaptiveMaxPermits,
    value: 'n',
    defaultText: '2 x permits',
  },
  adaptiveLatencyMs: {
    flag: 'adaptive-latency-ms',
    formerEnv: 'LIMITER_ADAPTIVE_LATENCY_MS',
    help: 'adaptive: a slower call counts as congestion, ms',
    schema: field.adaptiveLatencyMs,
    value: 'ms',
    defaultText: 'off',
  },
  batchMaxPermits: {
    flag: 'batch-max-permits',
    formerEnv: 'AGENT_BATCH_MAX_PERMITS',
    help: 'most permits trafficClass "batch" requests may hold (off or = permits: no lanes)',
    schema: field.batchMaxPermits,
    value: 'n|off',
    defaultText: 'half the permits, at least 1',
  },
  ...serverLimitFlags(field, 'AGENT'),
  shutdownGraceMs: {
    flag: 'shutdown-grace-ms',
    formerEnv: 'AGENT_SHUTDOWN_GRACE_MS',
    help: 'on SIGTERM, in-flight runs may finish this long, then they are aborted and answer 503, ms',
    schema: field.shutdownGraceMs,
    value: 'ms',
  },
} as const satisfies Record<keyof AgentServiceOptions, FlagSpec>;

const FLAGS = {
  ...SERVICE_FLAGS,
  replicas: { flag: 'replicas', formerEnv: 'AGENT_REPLICAS', help: 'replicas on consecutive ports from --port', schema: z.int().min(1).max(64).default(1), value: 'n' },
} as const satisfies Record<string, FlagSpec>;

type Key = keyof typeof FLAGS;

export interface CliConfig {
  readonly service: AgentServiceOptions;
  /** Independent replicas on consecutive ports starting at service.port. */
  readonly replicas: number;
}

function configFrom(flags: FlagSet<Key>): CliConfig {
  const { replicas: replicasGiven, ...raw } = flags.given();
  const replicas = (replicasGiven as number | undefined) ?? 1;
  // Replicas started together split the fleet budget evenly unless told otherwise.
  if (raw.replicaShare === undefined) raw.replicaShare = 1 / replicas;
  const result = agentServiceOptionsSchema.safeParse(raw);
  if (!result.success) throw new UsageError(`invalid agent configuration: ${flags.describe(result.error)}`);
  if (result.data.port !== 0 && result.data.port + replicas - 1 > 65_535) {
    throw new UsageError(`${flags.originOf('replicas')}: ${replicas} replicas from port ${result.data.port} run past 65535`);
  }
  return { service: result.data, replicas };
}

/** Flags over env over defaults, for code and tests; throws AgentConfigError naming the flag or variable. */
export function parseCliConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliConfig | 'help' {
  if (argv.includes('--help') || argv.includes('-h')) return 'help';
  const command = new Command('agent');
  const flags = new FlagSet(command, FLAGS);
  try {
    parseFlags(command, argv, env);
    return configFrom(flags);
  } catch (error) {
    if (error instanceof UsageError) throw new AgentConfigError(error.message);
    throw error;
  }
}

/** The quota-sharing mode and budget for the start line (the Redis URL without its password). */
function budgetDescription(service: AgentServiceOptions): string {
  const { tokensPerMinute } = modelLimiterOptions(service, service.model);
  const share = Math.round(tokensPerMinute * service.replicaShare);
  if (service.quotaSharing === 'central') {
    return `quota sharing central: ${tokensPerMinute} tokens/min shared in Redis ${redactUrl(service.redisUrl as string)}, fallback ${share} tokens/min`;
  }
  return `quota sharing ${service.quotaSharing}, budget ${share} tokens/min`;
}

async function serve({ service, replicas }: CliConfig, accessLogOrigin: string): Promise<void> {
  // One access log for all replicas, opened before the slow imports so a bad path fails
  // at once; with `-` stdout carries only log lines and the status lines go to stderr.
  let accessLog: AccessLog | undefined;
  try {
    accessLog = service.accessLog ? openAccessLog(service.accessLog) : undefined;
  } catch (error) {
    if (error instanceof AccessLogError) throw new UsageError(`${accessLogOrigin}: ${error.message}`);
    throw error;
  }
  const say = service.accessLog === '-' ? console.error : console.log;
  // Loaded after the flags are checked (ADK and the OTel SDK take seconds to import; a typo
  // should fail at once), and tracing starts BEFORE @google/adk is imported: see tracing.ts.
  const { startTracing } = await import('../agent/tracing.ts');
  const tracing = startTracing({ serviceName: 'quotascope-agent' });
  const [{ startAgentService }, { checkProviderReachable }] = await Promise.all([import('../agent/service.ts'), import('../agent/provider-model.ts')]);

  const started: AgentService[] = [];
  const release = async () => {
    await Promise.allSettled(started.map((s) => s.close()));
    await accessLog?.close();
    await tracing?.shutdown();
  };
  stopOnSignal(async (signal) => {
    say(`agent: ${signal}, stopping ${started.length} replica(s)`);
    await release();
  });

  try {
    // Every model call goes there: an unreachable provider is one line and exit 1 (after a
    // port problem, which the listen reports first), not a run of failed branches.
    const reachable = checkProviderReachable(service.providerUrl).then(
      () => undefined,
      (error: unknown) => error,
    );
    const lines: string[] = [];
    for (let i = 0; i < replicas; i++) {
      const port = service.port === 0 ? 0 : service.port + i;
      const replica = await startAgentService({ ...service, port }, { accessLog });
      started.push(replica);
      // The API key is deliberately not printed.
      lines.push(
        `agent: replica ${i + 1}/${replicas} listening on ${replica.url} ` +
          `(provider ${redactUrl(service.providerUrl)}, model ${service.model}, permits ${service.permits} (batch ≤ ${replica.limiter.batchMaxPermits ?? 'no cap'}), ` +
          `${budgetDescription(service)}, maxWait ${service.maxWaitMs} ms)`,
      );
    }
    const unreachable = await reachable;
    if (unreachable) throw unreachable;
    for (const line of lines) say(line);
  } catch (error) {
    await release();
    throw error;
  }
}

export function agentCommand(): Command {
  const command = new Command('agent').description('the sample ADK agent trees as an HTTP service, every model call through RateLimitedLlm');
  const flags = new FlagSet(command, FLAGS);
  command.action(() => serve(configFrom(flags), flags.originOf('accessLog')));
  return command;
}
