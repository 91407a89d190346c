// Benchmark: the central token bucket's cost. Reservations per second through
// RedisTokenBudget (the shared bucket of quota-sharing mode "central") against what
// redis-benchmark gets running the same Lua script with EVALSHA on the same redis-server, in
// the same run: the ratio is what the client side (node-redis, the budget's FIFO queue) costs
// on top of Redis itself. The budget sends the reservations queued in a replica together, one
// script run per batch, so several calls of one replica share a round trip; redis-benchmark
// sends one reservation per EVALSHA. The window is sized so every reservation is granted at
// once: this measures the path, not waiting for tokens.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { type BudgetRedisClient, connectBudgetRedis, RedisTokenBudget } from '../instrumentation/redis.ts';
import { ROLLING_WINDOW_SCRIPT } from '../instrumentation/budget/redis-token-budget.ts';
import { startRedisServer } from '../scripts/redis-server.ts';
import type { BenchModule, BenchRow } from './types.ts';

const run = promisify(execFile);
const GROUP = 'central bucket: token reservations/s on one redis-server';
const CAPACITY = 1e15;
const MEASURE_MS = 3_000;
const REQUESTS = 30_000;

/** redis-benchmark's requests/s for EVALSHA of the window script ("take" of 1 token), over `clients` connections. */
async function redisBenchmark(port: number, sha: string, clients: number): Promise<{ rps: number; p50Ms: number }> {
  const args = ['-h', '127.0.0.1', '-p', String(port), '-n', String(REQUESTS), '-c', String(clients), '--csv'];
  // ARGV: limit, windowMs, op, carry, flags, capacity (the key's identity), amount.
  const command = ['EVALSHA', sha, '1', 'quotascope:bench:redis-benchmark', String(CAPACITY), '60000', 'take', '0', '0', String(CAPACITY), '1'];
  const { stdout } = await run('redis-benchmark', [...args, ...command]);
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...
  const line = stdout.trim().split('\n').at(-1) ?? '';
  const fields = line.split(',').map((f) => f.replaceAll('"', ''));
  const rps = Number(fields[1]);
  if (!(rps > 0)) throw new Error(`redis-benchmark: unexpected output ${JSON.stringify(stdout)}`);
  return { rps, p50Ms: Number(fields[4]) };
}

/** Reservations per second through `replicas` RedisTokenBudgets (one client each) sharing one key. */
async function budgetReserves(url: string, replicas: number): Promise<number> {
  const clients: BudgetRedisClient[] = [];
  const budgets: RedisTokenBudget[] = [];
  const key = `quotascope:bench:${process.pid}:${replicas}`;
  for (let i = 0; i < replicas; i++) {
    const client = await connectBudgetRedis(url);
    clients.push(client);
    budgets.push(new RedisTokenBudget({ client, name: 'bench', key, tokensPerMinute: CAPACITY, registry: new Registry() }));
  }
  try {
    // Warm up (script cached, connections hot), then count for MEASURE_MS.
    await Promise.all(budgets.map((b) => b.reserve(1)));
    let count = 0;
    const start = performance.now();
    const end = start + MEASURE_MS;
    // Several reservations queued per budget, as concurrent calls of one replica would be.
    const loop = async (budget: RedisTokenBudget) => {
      while (performance.now() < end) {
        await budget.reserve(1);
        count++;
      }
    };
    await Promise.all(budgets.flatMap((b) => [loop(b), loop(b), loop(b), loop(b)]));
    return count / ((performance.now() - start) / 1000);
  } finally {
    for (const b of budgets) await b.close();
    for (const c of clients) await c.close().catch(() => c.destroy());
  }
}

const centralBucket: BenchModule = async () => {
  const redis = await startRedisServer();
  try {
    // One EVAL caches the script in Redis, so redis-benchmark's EVALSHA finds it.
    const loader = await connectBudgetRedis(redis.url);
    await loader.eval(ROLLING_WINDOW_SCRIPT, { keys: ['quotascope:bench:redis-benchmark'], arguments: [String(CAPACITY), '60000', 'peek', '0', '0', String(CAPACITY)] });
    await loader.close();
    const sha = createHash('sha1').update(ROLLING_WINDOW_SCRIPT).digest('hex');
    const one = await redisBenchmark(redis.port, sha, 1);
    const three = await redisBenchmark(redis.port, sha, 3);
    const budgetOne = await budgetReserves(redis.url, 1);
    const budgetThree = await budgetReserves(redis.url, 3);
    const rows: BenchRow[] = [
      { group: GROUP, name: 'redis-benchmark EVALSHA, 1 connection', baseline: true, opsPerSec: one.rps, extra: { p50Ms: one.p50Ms } },
      { group: GROUP, name: 'redis-benchmark EVALSHA, 3 connections', baseline: false, opsPerSec: three.rps, extra: { p50Ms: three.p50Ms } },
      {
        group: GROUP,
        name: 'RedisTokenBudget.reserve, 1 replica',
        baseline: false,
        opsPerSec: budgetOne,
        extra: { vsRedisBenchmarkSameConnections: Math.round((budgetOne / one.rps) * 1000) / 1000 },
      },
      {
        group: GROUP,
        name: 'RedisTokenBudget.reserve, 3 replicas',
        baseline: false,
        opsPerSec: budgetThree,
        extra: { vsRedisBenchmarkSameConnections: Math.round((budgetThree / three.rps) * 1000) / 1000 },
      },
    ];
    return rows;
  } finally {
    await redis.close();
  }
};

export default centralBucket;
