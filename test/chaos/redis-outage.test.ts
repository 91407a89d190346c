// Redis outages against a spawned agent (two replicas in one process, quotaSharing central):
// Redis killed, Redis stopped (SIGSTOP: sockets open, nothing answered), and Redis behind a
// TCP proxy that stops forwarding (a partition without a reset). Under each outage policy:
// - the idle replica's /healthz turns unreachable (health comes from a periodic probe);
// - the busy replica's requests, sent right after the fault, are answered by the policy
//   (fail-open: every branch ok from the static share; fail-closed: every branch refused
//   with BUDGET_UNAVAILABLE), counted in llm_limiter_budget_central_unavailable_total well
//   before maxWait (20 s) would have ended them;
// - SIGTERM stops the agent within 5 s while the outage lasts.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ERROR_CODES, limiterMetrics } from '../../instrumentation/index.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, metricsText, type RunResponse } from '../agent/stack.ts';
import { type RedisServer, startRedisServer } from '../support/redis-server.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

/** Forwards TCP to a target; stall() holds every byte both ways (connections stay open), resume() delivers them. */
class StallingProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #held: { to: Socket; data: Buffer }[] = [];
  #stalled = false;

  constructor(targetPort: number) {
    this.#server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => {});
      }
      const forward = (to: Socket) => (data: Buffer) => {
        if (this.#stalled) this.#held.push({ to, data });
        else to.write(data);
      };
      client.on('data', forward(upstream));
      upstream.on('data', forward(client));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  async listen(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `redis://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  stall(): void {
    this.#stalled = true;
  }

  resume(): void {
    this.#stalled = false;
    for (const { to, data } of this.#held.splice(0)) if (!to.destroyed) to.write(data);
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

interface Fault {
  readonly name: 'killed' | 'stopped' | 'partition';
  /** The Redis URL the agent is given. */
  url(): string;
  inject(): Promise<void>;
  heal(): Promise<void>;
}

let redis: RedisServer;
let proxy: StallingProxy;
let proxyUrl: string;
let mock: MockProvider;
const children: ChildProcess[] = [];
/** One line per case for the closing table. */
const observed: string[] = [];

const faults: Record<Fault['name'], Fault> = {
  killed: { name: 'killed', url: () => redis.url, inject: () => redis.stop(), heal: () => redis.restart() },
  stopped: {
    name: 'stopped',
    url: () => redis.url,
    inject: async () => redis.pause(),
    heal: async () => redis.resume(),
  },
  partition: {
    name: 'partition',
    url: () => proxyUrl,
    inject: async () => proxy.stall(),
    heal: async () => proxy.resume(),
  },
};

beforeAll(async () => {
  redis = await startRedisServer();
  proxy = new StallingProxy(redis.port);
  proxyUrl = await proxy.listen();
  mock = await startMockProvider(fastMock(50), { port: 0 });
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

afterAll(async () => {
  await proxy?.close();
  await redis?.close();
  await mock?.close();
  if (observed.length > 0) console.log(['case | policy | time to detect (idle, busy) | requests answered | SIGTERM exit', ...observed].join('\n'));
});

interface SpawnedAgent {
  readonly child: ChildProcess;
  readonly urls: readonly string[];
  output(): string;
}

async function startAgent(redisUrl: string, limiterName: string, extraArgs: readonly string[]): Promise<SpawnedAgent> {
  const args = ['cli/quotascope.ts', 'agent', '--port', '0', '--replicas', '2', '--provider-url', mock.url, '--http-timeout-ms', '10000'];
  args.push('--quota-sharing', 'central', '--redis-url', redisUrl, '--limiter-name', limiterName, ...extraArgs);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  await vi.waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`agent exited with ${child.exitCode}: ${output}`);
      expect(output).toContain('replica 2/2');
    },
    { timeout: 30_000, interval: 50 },
  );
  const urls = [...output.matchAll(/listening on (http:\/\/\S+)/g)].map((m) => m[1] as string);
  return { child, urls, output: () => output };
}

async function reachable(url: string): Promise<boolean | undefined> {
  const health = (await (await fetch(`${url}/healthz`)).json()) as { limiter: { centralBudgetReachable?: boolean } };
  return health.limiter.centralBudgetReachable;
}

async function run(url: string, document: string): Promise<{ status: number; body: RunResponse }> {
  const res = await fetch(`${url}/v1/agents/review/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ document }),
  });
  return { status: res.status, body: (await res.json()) as RunResponse };
}

async function unavailableCount(url: string, limiter: string, handling: 'local_share' | 'refused'): Promise<number> {
  return sumOfMetric(await metricsText(url), limiterMetrics.budgetCentralUnavailable.name, { limiter, handling });
}

const CASES = (['killed', 'stopped', 'partition'] as const).flatMap((fault) =>
  (['fail-open', 'fail-closed'] as const).map((policy) => ({ fault, policy })),
);

describe('Redis outages under both outage policies (spawned agent, two replicas)', () => {
  afterEach(async () => {
    // Every case starts with a running Redis and a forwarding proxy.
    redis.resume();
    proxy.resume();
    await redis.restart();
  });

  let caseNumber = 0;
  for (const { fault: faultName, policy } of CASES) it(`Redis ${faultName}, ${policy}`, async () => {
    const fault = faults[faultName];
    const limiter = `chaos_${++caseNumber}`;
    // fail-open is the default: that case passes no flag.
    const agent = await startAgent(fault.url(), limiter, policy === 'fail-open' ? [] : ['--central-outage', policy]);
    const [idle, busy] = agent.urls as [string, string];
    const warmUp = await run(busy, 'before the outage: let x = eval(input)');
    expect(warmUp.status).toBe(200);
    expect(warmUp.body.branches.every((b) => b.outcome === 'ok')).toBe(true);
    expect(await reachable(idle)).toBe(true);

    const faultAt = performance.now();
    await fault.inject();
    const answered = Promise.all(Array.from({ length: 3 }, (_, i) => run(busy, `during the outage ${i}: let x = eval(input)`)));
    answered.catch(() => {}); // awaited below; a failed case kills the agent first
    const handling = policy === 'fail-open' ? 'local_share' : 'refused';
    let busyDetectMs = 0;
    let idleDetectMs = 0;
    await Promise.all([
      // Bounds far below maxWait (20 s): a hung command left to maxWait fails them.
      vi
        .waitFor(async () => expect(await unavailableCount(busy, limiter, handling)).toBeGreaterThan(0), { timeout: 10_000, interval: 25 })
        .then(() => {
          busyDetectMs = performance.now() - faultAt;
        }),
      vi
        .waitFor(async () => expect(await reachable(idle)).toBe(false), { timeout: 10_000, interval: 25 })
        .then(() => {
          idleDetectMs = performance.now() - faultAt;
        }),
    ]);
    const responses = await answered;
    for (const { status, body } of responses) {
      if (policy === 'fail-open') {
        expect(status).toBe(200);
        for (const branch of body.branches) expect(branch).toEqual({ name: branch.name, outcome: 'ok' });
      } else {
        // Fail-closed: nothing can be funded, so each request is shed whole at the door, before any call.
        expect(status).toBe(429);
        expect(body).toMatchObject({ error: { code: ERROR_CODES.requestShed, reason: 'budget_unavailable' } });
      }
    }
    expect(await reachable(busy)).toBe(false);
    // Logged once per transition, not per call.
    expect(agent.output().match(/central token budget .* unreachable/g)?.length).toBe(2); // once per replica

    const termAt = performance.now();
    agent.child.kill('SIGTERM');
    await vi.waitFor(() => expect(agent.child.exitCode).not.toBeNull(), { timeout: 5_000, interval: 25 });
    const termMs = performance.now() - termAt;
    expect(agent.child.exitCode).toBe(0);
    await fault.heal();
    const answeredAs = policy === 'fail-open' ? `${responses.reduce((n, r) => n + r.body.branches.length, 0)} branches ok` : 'shed 429 budget_unavailable';
    observed.push(
      `${faultName} | ${policy} | ${Math.round(idleDetectMs)} ms, ${Math.round(busyDetectMs)} ms | ${responses.length}/${responses.length} (${answeredAs}) | exit 0 after ${Math.round(termMs)} ms`,
    );
  }, 60_000);
});

describe('two deployments on one Redis key (the default limiter name) with different quotas', () => {
  it.each([
    { name: 'another window', args: ['--quota-window-ms', '10000'], named: 'window 10000 ms' },
    { name: 'another limit', args: ['--tokens-per-minute', '300000'], named: 'limit 300000 tokens' },
  ])('$name: the second is refused whole (429, Retry-After within the bound) with one log line naming both; the first serves whole', async ({ args, named }) => {
    const limiter = `collision_${named.replace(/\D/g, '')}`;
    const first = await startAgent(redis.url, limiter, ['--tokens-per-minute', '600000', '--quota-window-ms', '60000']);
    const second = await startAgent(redis.url, limiter, ['--tokens-per-minute', '600000', '--quota-window-ms', '60000', ...args]);
    const before = await run(first.urls[0] as string, 'first deployment: let x = eval(input)');
    expect(before.status).toBe(200);
    const res = await fetch(`${second.urls[0]}/v1/agents/review/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ document: 'second deployment: let x = eval(input)' }),
    });
    expect(res.status).toBe(429);
    expect(await res.json()).toMatchObject({ error: { code: ERROR_CODES.requestShed, reason: 'budget_unavailable' } });
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual((60_000 + 600_000) / 1000);
    await vi.waitFor(() => expect(second.output()).toContain('holds another configuration'), { timeout: 5_000, interval: 25 });
    const line = second.output().split('\n').find((l) => l.includes('holds another configuration')) as string;
    expect(line).toContain('(window 60000 ms, limit 600000 tokens)');
    expect(line).toContain(named);
    expect(line).not.toContain('unreachable');
    // The first keeps its window: its requests stay whole, with no provider 429.
    for (const i of [1, 2]) {
      const after = await run(first.urls[1] as string, `first deployment again ${i}: let x = eval(input)`);
      expect(after.status).toBe(200);
      expect(after.body.branches.every((b) => b.outcome === 'ok')).toBe(true);
    }
    expect(first.output()).not.toContain('holds another configuration');
  }, 60_000);
});

describe('fail-closed means shed: a cold replica whose budget cannot be used', () => {
  it.each(['wrong key type', 'Redis killed'] as const)('%s: the cold replica sheds whole requests (429 + Retry-After), never 200 with every branch refused', async (fault) => {
    const limiter = `cold_${fault.replace(/\W/g, "_").toLowerCase()}`;
    const raw = await createClient({ url: redis.url }).connect();
    try {
      if (fault === 'wrong key type') await raw.set(`quotascope:budget:${limiter}`, 'not a budget');
    } finally {
      raw.destroy();
    }
    const agent = await startAgent(redis.url, limiter, ['--central-outage', 'fail-closed']);
    if (fault === 'Redis killed') await redis.stop();
    try {
      for (const url of agent.urls) {
        const res = await fetch(`${url}/v1/agents/review/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ document: 'cold: let x = eval(input)' }) });
        expect(res.status).toBe(429);
        expect(await res.json()).toMatchObject({ error: { code: ERROR_CODES.requestShed, reason: 'budget_unavailable' } });
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      if (fault === 'wrong key type') {
        await vi.waitFor(() => expect(agent.output()).toContain('is a Redis key of the wrong type'), { timeout: 5_000, interval: 25 });
        expect(agent.output()).not.toMatch(/unreachable \(WRONGTYPE/);
      }
    } finally {
      if (fault === 'Redis killed') await redis.restart();
    }
  }, 60_000);
});
