// `serve --agent FILE[#export] [flags]`: serves a user's ADK agent with every model rate-
// limited until SIGINT/SIGTERM. A bad flag, file, export or tree is one line on stderr and
// exit code 2 before anything listens; a start failure (port taken, Redis down) exits 1.
import { AgentModuleError } from '../agent-module.ts';
import { AgentConfigError } from '../config.ts';
import { AgentTreeError } from '../tree-walk.ts';
import { parseServeArgs, SERVE_USAGE } from './options.ts';
import type { ModelDecision } from './wrap-models.ts';

const USAGE_ERRORS = [AgentConfigError, AgentModuleError, AgentTreeError];

function describeDecisions(decisions: readonly ModelDecision[]): string {
  const byLimiter = new Map<string, string[]>();
  const kept: string[] = [];
  for (const d of decisions) {
    if (d.action === 'wrapped') byLimiter.set(`${d.limiter} (${d.model})`, [...(byLimiter.get(`${d.limiter} (${d.model})`) ?? []), d.agent]);
    else if (d.action === 'kept') kept.push(`${d.agent}: ${d.reason}`);
  }
  const parts = [...byLimiter].map(([limiter, agents]) => `limiter ${limiter}: ${agents.join(', ')}`);
  if (kept.length > 0) parts.push(`left as is: ${kept.join(', ')}`);
  return parts.join('; ') || 'no models';
}

/** Runs the command; resolves with the exit code once a start failed, or never while serving. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let options: ReturnType<typeof parseServeArgs>;
  try {
    options = parseServeArgs(argv, env);
  } catch (error) {
    if (error instanceof AgentConfigError) {
      console.error(`serve: ${error.message}`);
      return 2;
    }
    throw error;
  }
  if (options === 'help') {
    console.log(SERVE_USAGE);
    return 0;
  }
  // Loaded after the flags are checked: tracing starts before ADK is imported (its tracer
  // is taken at import time), and ADK takes seconds to import.
  const { startTracing } = await import('../tracing.ts');
  const tracing = startTracing({ serviceName: 'quotascope-serve' });
  const { startServe } = await import('./server.ts');
  let served: Awaited<ReturnType<typeof startServe>>;
  try {
    served = await startServe(options);
  } catch (error) {
    await tracing?.shutdown();
    const usageError = USAGE_ERRORS.some((kind) => error instanceof kind);
    console.error(`serve: ${usageError ? '' : 'failed to start: '}${(error as Error).message}`);
    return usageError ? 2 : 1;
  }
  const say = options.accessLog === '-' ? console.error : console.log;
  say(
    `serve: app "${served.appName}" (${served.module.file}#${served.module.exportName}) listening on ${served.url}; ` +
      `${options.wrap ? `provider ${options.providerUrl}, permits ${options.permits} per model, maxWait ${options.maxWaitMs} ms; ` : 'models not wrapped; '}` +
      describeDecisions(served.models),
  );
  return new Promise<number>((resolve) => {
    const stop = async (signal: string) => {
      say(`serve: ${signal}, stopping`);
      await served.close();
      await tracing?.shutdown();
      resolve(0);
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
  });
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
