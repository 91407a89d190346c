// The stack a local run starts on loopback, each part a child process in the run's group:
// the mock provider (with the run's config), the agent side (the agent service or `serve`
// for a user's module, see agent-target.ts) pointed at it, and a Prometheus scraping both,
// ready once it has scraped each of them. Quota sharing "central" without a Redis URL gets a
// redis-server of its own on loopback (redis-server.ts), stopped with the run.
import { type AgentLimits, type AgentTarget, startAgentTarget } from './agent-target.ts';
import { putMockConfig } from './mock-admin.ts';
import { freePort, type ProcessGroup, waitForHealthy } from './processes.ts';
import { AGENT_JOB, MOCK_JOB, startPrometheus, waitForFirstScrape } from './prometheus.ts';
import { QUOTASCOPE_BIN } from './quotascope-bin.ts';
import { startLocalRedis } from './redis-server.ts';

/** The scrape interval of a local stack's Prometheus, seconds. */
export const LOCAL_STACK_SCRAPE_SECONDS = 2;

export interface LocalStackOptions {
  target: AgentTarget;
  /** The agent side's limiters (the provider is the stack's mock). */
  limits: Omit<AgentLimits, 'providerUrl'>;
  /** The mock provider's config for the run (merged over its defaults), set before the agent starts. */
  mockConfig?: unknown;
  /** Said after the mock provider's URL (e.g. its quota). */
  mockNote?: string;
  /** Prometheus's folder (config and TSDB). */
  prometheusDir: string;
  scrapeIntervalSeconds?: number;
  say: (line: string) => void;
}

export interface LocalStack {
  mockUrl: string;
  agentUrls: string[];
  prometheusUrl: string;
  /** The Redis of quota sharing "central" (the run's own redis-server unless one was given). */
  redisUrl?: string;
}

const hostPort = (url: string) => url.replace(/^https?:\/\//, '');

export async function startLocalStack(group: ProcessGroup, o: LocalStackOptions): Promise<LocalStack> {
  const mockUrl = `http://127.0.0.1:${await freePort()}`;
  group.start('mock-provider', process.execPath, [QUOTASCOPE_BIN, 'mock-provider', '--port', new URL(mockUrl).port, '--host', '127.0.0.1']);
  await waitForHealthy('mock provider', `${mockUrl}/healthz`, 30_000, () => group.assertRunning());
  if (o.mockConfig !== undefined) await putMockConfig(mockUrl, o.mockConfig);
  o.say(`mock provider on ${mockUrl}${o.mockNote ? ` (${o.mockNote})` : ''}`);

  let redisUrl = o.limits.redisUrl;
  if (o.limits.quotaSharing === 'central' && redisUrl === undefined) {
    redisUrl = await startLocalRedis(group);
    o.say(`redis-server on ${redisUrl} (quota sharing central: the replicas share one window there)`);
  }
  const agentUrls = await startAgentTarget(group, o.target, { ...o.limits, providerUrl: mockUrl, redisUrl });
  const what = o.target.kind === 'service' ? 'agent service' : `serve (app "${o.target.app}", ${o.target.spec})`;
  o.say(`${what}: ${agentUrls.length} replica(s) at ${agentUrls.join(', ')}`);

  const prometheusUrl = await startPrometheus(group, {
    jobs: { [AGENT_JOB]: agentUrls.map(hostPort), [MOCK_JOB]: [hostPort(mockUrl)] },
    dataDir: o.prometheusDir,
    scrapeIntervalSeconds: o.scrapeIntervalSeconds ?? LOCAL_STACK_SCRAPE_SECONDS,
  });
  await waitForFirstScrape(prometheusUrl, agentUrls.length + 1);
  o.say(`prometheus on ${prometheusUrl}`);
  return { mockUrl, agentUrls, prometheusUrl, ...(redisUrl === undefined ? {} : { redisUrl }) };
}
