// Measures the central token bucket for deploy/README.md's scale figures, on one real
// redis-server (loopback): model calls per second through RedisTokenBudget (one reserve and
// one reconcile each, as the limiter does) with 1, 4 and 16 "replicas" (a client and a
// budget each, one shared key), then redis-benchmark's EVALSHA rate of the same script on the
// same server, i.e. what one Redis key can take from many connections.
//   node test/deploy/central-bucket-throughput.ts [calls per replica count, default 4000]
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { connectBudgetRedis, RedisTokenBudget } from '../../instrumentation/redis.ts';
import { ROLLING_WINDOW_SCRIPT } from '../../instrumentation/redis-token-budget.ts';
import { startRedisServer } from '../instrumentation/redis-server.ts';

const CALLS = Number(process.argv[2] ?? 4000);
if (!Number.isInteger(CALLS) || CALLS < 100 || CALLS > 1_000_000) throw new Error('calls: an integer in 100..1000000');
// Never empty: the figure is the script's round trips, not waiting for a refill.
const CAPACITY = 1e12;
const KEY = 'quotascope:budget:bench';

async function callsPerSecond(url: string, replicas: number): Promise<{ callsPerSecond: number; evalPerSecond: number }> {
  const clients = await Promise.all(Array.from({ length: replicas }, () => connectBudgetRedis(url)));
  const budgets = clients.map((client) => new RedisTokenBudget({ client, name: 'bench', key: KEY, tokensPerMinute: CAPACITY, registry: new Registry() }));
  const perReplica = Math.ceil(CALLS / replicas);
  await Promise.all(budgets.map((b) => b.reserve(1))); // loads the script (EVAL once)
  const started = performance.now();
  await Promise.all(
    budgets.map(async (budget) => {
      // A replica under load: every call queued at once, served head by head (FIFO).
      await Promise.all(
        Array.from({ length: perReplica }, async () => {
          const ticket = await budget.reserve(100);
          budget.reconcile(ticket, 60);
        }),
      );
      await budget.settled();
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const c of clients) c.destroy();
  const calls = perReplica * replicas;
  return { callsPerSecond: calls / seconds, evalPerSecond: (2 * calls) / seconds };
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  try {
    const before = loadavg()[0];
    const rows: string[] = [];
    for (const replicas of [1, 4, 16]) {
      const r = await callsPerSecond(redis.url, replicas);
      rows.push(`RedisTokenBudget, ${replicas} replica(s): ${Math.round(r.callsPerSecond)} calls/s (${Math.round(r.evalPerSecond)} EVALSHA/s)`);
    }
    const sha = createHash('sha1').update(ROLLING_WINDOW_SCRIPT).digest('hex');
    for (const connections of [1, 50]) {
      const args = ['-p', String(redis.port), '-n', '100000', '-c', String(connections), '-q', 'EVALSHA', sha, '1', KEY, String(CAPACITY), '60000', 'take', '0', '0', '1'];
      const { stdout } = await promisify(execFile)('redis-benchmark', args);
      rows.push(`redis-benchmark -c ${connections}: ${stdout.trim().split('\r').pop()?.trim()}`);
    }
    console.log(rows.join('\n'));
    console.log(`load average (1 min) before/after: ${before.toFixed(1)} / ${loadavg()[0].toFixed(1)}`);
  } finally {
    await redis.close();
  }
}

await main();
