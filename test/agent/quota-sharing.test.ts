// The agent service's quota-sharing modes against the real mock provider (and, for
// `central`, a real redis-server): two replicas sharing one Redis bucket never admit more
// tokens together than the one shared budget allows, where the same two replicas with static
// budgets do; `adaptive` moves the permit limit on 429s; the switch is validated.
import { describeFailure } from '../../cli/errors.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigError } from '../../agent/config.ts';
import { parseCliConfig } from '../../cli/agent.ts';
import { type AgentService, startAgentService } from '../../agent/service.ts';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { type RedisServer, startRedisServer } from '../support/redis-server.ts';
import { fastMock, metricsText, type RunResponse } from './stack.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

const TPM = 6_000; // the fleet's budget: 100 tokens/s, scaled down
const PER_SECOND = TPM / 60;

let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedisServer();
});

afterAll(async () => {
  await redis?.close();
});

/** One review request: answered (200) or shed whole at the door (429). */
async function post(agent: AgentService, document: string): Promise<{ status: number; body: RunResponse | undefined }> {
  const res = await fetch(`${agent.url}/v1/agents/review/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ document }),
  });
  expect([200, 429]).toContain(res.status);
  if (res.status !== 200) {
    await res.body?.cancel();
    return { status: res.status, body: undefined };
  }
  return { status: res.status, body: (await res.json()) as RunResponse };
}

async function run(agent: AgentService, document: string): Promise<RunResponse> {
  const { status, body } = await post(agent, document);
  expect(status).toBe(200);
  return body as RunResponse;
}

/**
 * Two replicas, each told the fleet budget is TPM with replicaShare 1 (so a static replica
 * would spend all of it on its own), 6 review requests each at once (60 calls of a few
 * hundred tokens: well beyond the budget). Returns the tokens the mock counted and the
 * bound the shared budget allows over the run.
 */
async function twoReplicas(quotaSharing: 'static' | 'central', key: string) {
  const mock: MockProvider = await startMockProvider(fastMock(100), { port: 0 });
  const options = {
    port: 0,
    providerUrl: mock.url,
    httpTimeoutMs: 10_000,
    quotaSharing,
    redisUrl: redis.url,
    limiterName: key,
    tokensPerMinute: TPM,
    replicaShare: 1,
    estimatedTokensPerCall: 1_000, // above what a call uses: the surplus is given back on reconcile
    countedTokens: 'total', // the oracle below sums input and output, so the budget counts both
    maxWaitMs: 1_500,
  } as const;
  const replicas = [await startAgentService(options), await startAgentService(options)];
  try {
    const start = performance.now();
    const answers = await Promise.all(
      replicas.flatMap((agent, r) => Array.from({ length: 6 }, (_, i) => post(agent, `replica ${r} document ${i}: let x = eval(input)`))),
    );
    const responses = answers.flatMap((a) => (a.body ? [a.body] : []));
    const shed = answers.filter((a) => a.status === 429).length;
    const seconds = (performance.now() - start) / 1000;
    const mockText = await metricsText(mock.url);
    const mockTokens = sumOfMetric(mockText, 'mock_provider_tokens_total');
    const texts = await Promise.all(replicas.map((agent) => metricsText(agent.url)));
    const actualByReplica = texts.map((t) => sumOfMetric(t, limiterMetrics.tokensActual.name, { limiter: key }));
    const timeouts = texts.reduce((sum, t) => sum + sumOfMetric(t, limiterMetrics.timeouts.name, { limiter: key }), 0);
    const health = (await (await fetch(`${replicas[0].url}/healthz`)).json()) as { limiter: Record<string, unknown> };
    return { responses, shed, mockTokens, actualByReplica, timeouts, health, bound: TPM + PER_SECOND * seconds };
  } finally {
    await Promise.all(replicas.map((agent) => agent.close()));
    await mock.close();
  }
}

describe('quotaSharing central: two replicas, one Redis bucket', () => {
  it('the tokens both replicas send together never exceed the shared budget (capacity + refill over the run)', async () => {
    const central = await twoReplicas('central', 'shared_central');
    // The mock is the oracle: what it counted over the run stays within the one budget.
    expect(central.mockTokens).toBeLessThanOrEqual(central.bound);
    expect(central.actualByReplica[0] + central.actualByReplica[1]).toBeLessThanOrEqual(central.bound);
    // ...and the budget really bound: most of it was used, both replicas got some, and the rest
    // was turned away: requests shed whole at the door, or calls that timed out waiting.
    expect(central.mockTokens).toBeGreaterThan(0.6 * TPM);
    expect(central.actualByReplica[0]).toBeGreaterThan(0);
    expect(central.actualByReplica[1]).toBeGreaterThan(0);
    expect(central.shed + central.timeouts).toBeGreaterThan(0);
    expect(central.health.limiter).toMatchObject({ quotaSharing: 'central', centralBudgetReachable: true });
  }, 60_000);

  it('the same load with static budgets (each replica the whole TPM) overruns that bound: the test can tell', async () => {
    const independent = await twoReplicas('static', 'independent_static');
    expect(independent.mockTokens).toBeGreaterThan(independent.bound);
  }, 60_000);

  it('a Redis that cannot be reached at start fails the start, naming the mode', async () => {
    await expect(
      startAgentService({ port: 0, quotaSharing: 'central', redisUrl: 'redis://127.0.0.1:1', providerUrl: 'http://127.0.0.1:1' }),
    ).rejects.toThrow(/quotaSharing "central": cannot connect to Redis at redis:\/\/127\.0\.0\.1:1/);
    // The bin prints it in one line that says it once.
    const error = await startAgentService({ port: 0, quotaSharing: 'central', redisUrl: 'redis://127.0.0.1:1', providerUrl: 'http://127.0.0.1:1' }).catch((e: unknown) => e);
    const { line } = describeFailure(error);
    expect(line.match(/cannot connect to Redis/g)).toHaveLength(1);
    expect(line.match(/redis:\/\/127\.0\.0\.1:1/g)).toHaveLength(1);
  });
});

describe('quotaSharing adaptive', () => {
  let mock: MockProvider;
  beforeAll(async () => {
    mock = await startMockProvider(fastMock(50, { throttleProbability: 0.6, seed: 3 }), { port: 0 });
  });
  afterAll(async () => {
    await mock?.close();
  });

  it('429s move the permit limit down (AIMD); static keeps it fixed', async () => {
    const base = { port: 0, providerUrl: mock.url, permits: 10, maxWaitMs: 5_000, httpTimeoutMs: 10_000 } as const;
    const adaptive = await startAgentService({ ...base, quotaSharing: 'adaptive', adaptiveMaxPermits: 12 });
    const fixed = await startAgentService({ ...base, quotaSharing: 'static' });
    try {
      await Promise.all([run(adaptive, 'doc a'), run(fixed, 'doc b')]);
      const text = await metricsText(adaptive.url);
      expect(sumOfMetric(text, limiterMetrics.rateLimited.name, { limiter: 'gemini' })).toBeGreaterThan(0);
      expect(adaptive.limiter.snapshot().permitsLimit).toBeLessThan(10);
      expect(sumOfMetric(text, limiterMetrics.permitsLimit.name, { limiter: 'gemini' })).toBe(adaptive.limiter.snapshot().permitsLimit);
      expect(fixed.limiter.snapshot().permitsLimit).toBe(10);
    } finally {
      await adaptive.close();
      await fixed.close();
    }
  }, 60_000);
});

describe('the quota-sharing switch is validated', () => {
  it('flags and env, with errors naming where the value came from', () => {
    const central = parseCliConfig(['--quota-sharing', 'central', '--redis-url', 'redis://127.0.0.1:6379'], {});
    expect(central !== 'help' && central.service).toMatchObject({ quotaSharing: 'central', redisUrl: 'redis://127.0.0.1:6379' });
    const fromEnv = parseCliConfig([], { QUOTASCOPE_AGENT_QUOTA_SHARING: 'adaptive', QUOTASCOPE_AGENT_ADAPTIVE_MAX_PERMITS: '20' });
    expect(fromEnv !== 'help' && fromEnv.service).toMatchObject({ quotaSharing: 'adaptive', adaptiveMaxPermits: 20 });
    const defaults = parseCliConfig([], {});
    expect(defaults !== 'help' && defaults.service.quotaSharing).toBe('static');

    expect(() => parseCliConfig(['--quota-sharing', 'gossip'], {})).toThrow(/--quota-sharing/);
    expect(() => parseCliConfig([], { QUOTASCOPE_AGENT_QUOTA_SHARING: 'gossip' })).toThrow(/QUOTASCOPE_AGENT_QUOTA_SHARING/);
    expect(() => parseCliConfig(['--quota-sharing', 'central'], {})).toThrow(AgentConfigError);
    expect(() => parseCliConfig(['--quota-sharing', 'central'], {})).toThrow(/--redis-url \(QUOTASCOPE_AGENT_REDIS_URL\): required when quotaSharing is "central"/);
    expect(() => parseCliConfig(['--quota-sharing', 'central', '--redis-url', 'http://x'], {})).toThrow(/--redis-url/);
    expect(() => parseCliConfig(['--permits', '10', '--adaptive-max-permits', '5'], {})).toThrow(/--adaptive-max-permits/);
  });

  it('the outage policy and the queue cap: flags, env, defaults, errors naming the source', () => {
    const defaults = parseCliConfig([], {});
    expect(defaults !== 'help' && defaults.service.centralOutage).toBe('fail-open');
    expect(defaults !== 'help' && defaults.service.maxWaiting).toBeUndefined();
    const closed = parseCliConfig(['--central-outage', 'fail-closed', '--max-waiting', '50'], {});
    expect(closed !== 'help' && closed.service).toMatchObject({ centralOutage: 'fail-closed', maxWaiting: 50 });
    const fromEnv = parseCliConfig([], { QUOTASCOPE_AGENT_CENTRAL_OUTAGE: 'fail-closed', QUOTASCOPE_AGENT_MAX_WAITING: '7' });
    expect(fromEnv !== 'help' && fromEnv.service).toMatchObject({ centralOutage: 'fail-closed', maxWaiting: 7 });
    expect(() => parseCliConfig(['--central-outage', 'fail-sometimes'], {})).toThrow(/--central-outage/);
    expect(() => parseCliConfig([], { QUOTASCOPE_AGENT_CENTRAL_OUTAGE: 'open' })).toThrow(/QUOTASCOPE_AGENT_CENTRAL_OUTAGE/);
    for (const bad of ['0', '1.5', '1000000', 'lots']) expect(() => parseCliConfig(['--max-waiting', bad], {})).toThrow(/--max-waiting/);
  });
});
