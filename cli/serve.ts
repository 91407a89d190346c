// `quotascope serve --agent FILE[#export]`: serves a user's ADK agent (ADK API-server
// protocol and the native run endpoint) with every model rate-limited, until SIGINT/SIGTERM.
// The listener, provider and limiter flags are the `agent` command's (same defaults and
// bounds; env variables QUOTASCOPE_SERVE_*, and the agent's former names as aliases). A bad flag, file, export or tree exits 2 before anything listens.
import { Command } from 'commander';
import { AgentConfigError } from '../agent/config.ts';
import { redactUrl } from '../instrumentation/redact-url.ts';
import { SERVE_SHARED_KEYS, type ServeOptions, serveOptionsSchema } from '../agent/serve/options.ts';
import type { ModelDecision } from '../agent/serve/wrap-models.ts';
import { SERVICE_FLAGS } from './agent.ts';
import { UsageError } from './errors.ts';
import { stopOnSignal } from '../shared/stop-signals.ts';
import { FlagSet, type FlagSpec, parseFlags } from './flags.ts';

const field = serveOptionsSchema.shape;

const FLAGS = {
  agent: {
    flag: 'agent',
    env: false,
    value: 'file[#export]',
    help: 'TS or JS module exporting the root agent (a BaseAgent or a Workflow); export rootAgent by default',
    schema: field.agent.optional(),
  },
  appName: {
    flag: 'app-name',
    env: false,
    value: 'name',
    help: 'app name for /list-apps and /v1/agents/NAME/run',
    schema: field.appName,
    defaultText: "the file's name, or its folder's for agent.ts",
  },
  importTimeoutMs: {
    flag: 'import-timeout-ms',
    formerEnv: 'SERVE_IMPORT_TIMEOUT_MS',
    value: 'ms',
    help: 'importing the module may take this long (a top-level await that never settles ends here), ms',
    schema: field.importTimeoutMs,
  },
  maxSessions: {
    flag: 'max-sessions',
    formerEnv: 'SERVE_MAX_SESSIONS',
    value: 'n',
    help: 'ADK sessions kept in memory; one more evicts the session idle longest (agent_sessions_evicted_total)',
    schema: field.maxSessions,
  },
  sessionIdleMs: {
    flag: 'session-idle-ms',
    formerEnv: 'SERVE_SESSION_IDLE_MS',
    value: 'ms',
    help: 'a session unused this long is evicted, ms',
    schema: field.sessionIdleMs,
  },
  ...(Object.fromEntries(SERVE_SHARED_KEYS.map((key) => [key, SERVICE_FLAGS[key]])) as Pick<typeof SERVICE_FLAGS, (typeof SERVE_SHARED_KEYS)[number]>),
} as const satisfies Record<string, FlagSpec>;

type Key = keyof typeof FLAGS;

function defineFlags(command: Command): FlagSet<Key> {
  command.option('--no-wrap', 'leave every model as it is (no limiter)');
  return new FlagSet(command, FLAGS);
}

function optionsFrom(command: Command, flags: FlagSet<Key>): ServeOptions {
  const raw = { ...flags.given(), wrap: command.opts().wrap !== false };
  const result = serveOptionsSchema.safeParse(raw);
  if (!result.success) throw new UsageError(flags.describe(result.error));
  return result.data;
}

/** Flags over env over defaults, for code and tests; throws AgentConfigError naming the flag or variable. */
export function parseServeArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServeOptions | 'help' {
  if (argv.includes('--help') || argv.includes('-h')) return 'help';
  const command = new Command('serve');
  const flags = defineFlags(command);
  try {
    parseFlags(command, argv, env);
    return optionsFrom(command, flags);
  } catch (error) {
    if (error instanceof UsageError) throw new AgentConfigError(error.message);
    throw error;
  }
}

/** Who uses which limiter, with each limiter's budget (tokens/min of this replica); what was left as it is. */
function describeDecisions(decisions: readonly ModelDecision[], budgets: ReadonlyMap<string, number>, sharedScope: boolean): string {
  const byLimiter = new Map<string, string[]>();
  const kept: string[] = [];
  for (const d of decisions) {
    const budget = budgets.get(d.action === 'wrapped' ? d.model : '');
    const label = d.action === 'wrapped' ? `${d.limiter} (${d.model}, ${budget} tokens/min${sharedScope ? ' shared by every model' : ''})` : '';
    if (d.action === 'wrapped') byLimiter.set(label, [...(byLimiter.get(label) ?? []), d.agent]);
    else if (d.action === 'kept') kept.push(`${d.agent}: ${d.reason}`);
  }
  const parts = [...byLimiter].map(([limiter, agents]) => `limiter ${limiter}: ${agents.join(', ')}`);
  if (kept.length > 0) parts.push(`left as is: ${kept.join(', ')}`);
  if (decisions.some((d) => d.action === 'kept' && d.reason === 'already rate-limited')) parts.push('the limiter metrics of your own wrappers are served at /metrics too');
  return parts.join('; ') || 'no models';
}

async function serve(options: ServeOptions): Promise<void> {
  // Loaded after the flags are checked: tracing starts before ADK is imported (its tracer
  // is taken at import time), and ADK takes seconds to import.
  const { startTracing } = await import('../agent/tracing.ts');
  const tracing = startTracing({ serviceName: 'quotascope-serve' });
  const [{ startServe }, { AgentModuleError, loadAgentModule }, { AgentTreeError }, { checkProviderReachable, lendProviderKey }] = await Promise.all([
    import('../agent/serve/server.ts'),
    import('../agent/agent-module.ts'),
    import('../instrumentation/tree/tree-walk.ts'),
    import('../agent/provider-model.ts'),
  ]);
  let served: Awaited<ReturnType<typeof startServe>>;
  try {
    // The module (a wrong file or export is a usage error) and the port first, then the provider.
    lendProviderKey(options.apiKey);
    const module = await loadAgentModule(options.agent, undefined, options.importTimeoutMs);
    const reachable = options.wrap
      ? checkProviderReachable(options.providerUrl).then(
          () => undefined,
          (error: unknown) => error,
        )
      : Promise.resolve(undefined);
    served = await startServe(options, module);
    // Every wrapped model calls it: an unreachable provider is one line and exit 1, not a 200 per run with "fetch failed".
    const unreachable = await reachable;
    if (unreachable) {
      await served.close();
      throw unreachable;
    }
  } catch (error) {
    await tracing?.shutdown();
    if ([AgentConfigError, AgentModuleError, AgentTreeError].some((kind) => error instanceof kind)) throw new UsageError((error as Error).message);
    throw error;
  }
  const say = options.accessLog === '-' ? console.error : console.log;
  say(
    `serve: app "${served.appName}" (${served.module.file}#${served.module.exportName}) listening on ${served.url}; ` +
      `${options.wrap ? `provider ${redactUrl(options.providerUrl)}, permits ${options.permits} per model, maxWait ${options.maxWaitMs} ms; ` : 'models not wrapped; '}` +
      describeDecisions(served.models, new Map([...served.limiters].map(([model, limiter]) => [model, limiter.budget.capacity])), options.quotaScope === 'key'),
  );
  stopOnSignal(async (signal) => {
    say(`serve: ${signal}, stopping`);
    await served.close();
    await tracing?.shutdown();
  });
}

export function serveCommand(): Command {
  const command = new Command('serve').description("serve your own ADK agent (ADK API-server protocol and /v1/agents/{app}/run) with every model rate-limited");
  const flags = defineFlags(command);
  command.action(() => serve(optionsFrom(command, flags)));
  return command;
}
