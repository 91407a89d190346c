// `npm run agent -- --port 8080 --provider-url URL [--replicas N ...]`: starts N
// independent agent service replicas on consecutive ports and serves until SIGINT/SIGTERM.
import { type AccessLog, AccessLogError, openAccessLog } from './access-log.ts';
import { AgentConfigError, type AgentServiceOptions, CLI_USAGE, parseCliConfig } from './config.ts';
import type { AgentService } from './service.ts';

/** The quota-sharing mode and budget for the start line (the Redis URL without its password). */
function budgetDescription(service: AgentServiceOptions): string {
  const share = Math.round(service.tokensPerMinute * service.replicaShare);
  if (service.quotaSharing === 'central') {
    const url = new URL(service.redisUrl as string);
    url.username = '';
    url.password = '';
    return `quota sharing central: ${service.tokensPerMinute} tokens/min shared in Redis ${url.host}, fallback ${share} tokens/min`;
  }
  return `quota sharing ${service.quotaSharing}, budget ${share} tokens/min`;
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseCliConfig>;
  try {
    parsed = parseCliConfig(process.argv.slice(2));
  } catch (error) {
    if (error instanceof AgentConfigError) {
      console.error(`agent: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  if (parsed === 'help') {
    console.log(CLI_USAGE);
    return;
  }
  const { service, replicas } = parsed;
  // One access log for all replicas, opened before the slow imports so a bad path fails
  // at once; with `-` stdout carries only log lines and the status lines go to stderr.
  let accessLog: AccessLog | undefined;
  try {
    accessLog = service.accessLog ? openAccessLog(service.accessLog) : undefined;
  } catch (error) {
    if (error instanceof AccessLogError) {
      const fromFlag = process.argv.some((a) => a === '--access-log' || a.startsWith('--access-log='));
      console.error(`agent: ${fromFlag ? '--access-log' : 'AGENT_ACCESS_LOG'}: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const say = service.accessLog === '-' ? console.error : console.log;
  // Loaded after the flags are checked (ADK and the OTel SDK take seconds to import; a typo
  // should fail at once), and tracing starts BEFORE @google/adk is imported: see tracing.ts.
  const { startTracing } = await import('./tracing.ts');
  const tracing = startTracing({ serviceName: 'quotascope-agent' });
  const { startAgentService } = await import('./service.ts');

  const started: AgentService[] = [];
  const stop = async (signal: string) => {
    say(`agent: ${signal}, stopping ${started.length} replica(s)`);
    await Promise.allSettled(started.map((s) => s.close()));
    await accessLog?.close();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));

  try {
    for (let i = 0; i < replicas; i++) {
      const port = service.port === 0 ? 0 : service.port + i;
      const replica = await startAgentService({ ...service, port }, { accessLog });
      started.push(replica);
      // The API key is deliberately not printed.
      say(
        `agent: replica ${i + 1}/${replicas} listening on ${replica.url} ` +
          `(provider ${service.providerUrl}, model ${service.model}, permits ${service.permits} (batch ≤ ${replica.limiter.batchMaxPermits ?? 'no cap'}), ` +
          `${budgetDescription(service)}, maxWait ${service.maxWaitMs} ms)`,
      );
    }
  } catch (error) {
    console.error(`agent: failed to start: ${(error as Error).message}`);
    await Promise.allSettled(started.map((s) => s.close()));
    await accessLog?.close();
    await tracing?.shutdown();
    process.exit(1);
  }
}

await main();
