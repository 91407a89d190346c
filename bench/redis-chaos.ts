// Benchmark: the central bucket under Redis faults. Two replicas (a RateLimitedLlm each over
// ADK's Gemini model, the real genai client) share one RedisTokenBudget key on a real
// redis-server, under bursts of model calls at 1.3x the fleet's budget, while Redis is
// killed, restarted (empty), stopped (SIGSTOP) and continued (SIGCONT). Time is compressed
// like the quota benchmark: a 6 s quota window. Run once per outage policy, each against a
// fresh mock provider (the oracle: the 429s it answered and the tokens it counted per window).
//
// fail-closed must see 0 provider 429s. fail-open serves from each replica's local share
// (half the fleet's budget here) while Redis is unreachable; its bound: in any window the
// fleet admits at most the central limit plus what the local shares admitted in that window,
// and a local share admits at most its size minus what its replica already admitted in the
// window (from Redis or locally). The rows give the measured local-share tokens per window
// next to the tokens the provider counted, and the 429s.
import { LogLevel, setLogLevel } from '@google/adk';
import { Registry } from 'prom-client';
import { ProviderGemini } from '../agent/provider-model.ts';
import type { CentralOutagePolicy } from '../instrumentation/budget/budget.ts';
import { type CallReport, RateLimitedLlm } from '../instrumentation/index.ts';
import { type BudgetRedisClient, connectBudgetRedis, RedisTokenBudget } from '../instrumentation/redis.ts';
import { fakeRequest } from '../instrumentation/testing.ts';
import { documentForTokens } from '../loadtest/scenario/document.ts';
import { startRedisServer, type RedisServer } from '../scripts/redis-server.ts';
import { startChild, stopChild } from './support/child-process.ts';
import type { BenchRow } from './types.ts';

const GROUP = 'central bucket under Redis faults: kill, restart, SIGSTOP, SIGCONT; 2 replicas, bursts at 1.3x the budget';
const WINDOW_MS = 6_000;
const WINDOWS = 12;
const QUOTA = 60_000;
const BUDGET = 0.9 * QUOTA;
const CALL_TOKENS = 1_000;
const REPLICAS = 2;
const OVERLOAD = 1.3;
/** When each fault is injected, in windows from the start of the load. */
const FAULTS: readonly { at: number; what: string; apply: (redis: RedisServer) => Promise<void> }[] = [
  { at: 2, what: 'kill', apply: (r) => r.stop() },
  { at: 3.5, what: 'restart', apply: (r) => r.restart() },
  { at: 6, what: 'SIGSTOP', apply: async (r) => r.pause() },
  { at: 7.5, what: 'SIGCONT', apply: async (r) => r.resume() },
];

interface CallRecord {
  readonly admittedAt: number;
  readonly tokens: number;
  readonly replica: number;
  readonly outcome: string;
  readonly attempts: number;
}

interface PolicyResult {
  readonly policy: CentralOutagePolicy;
  readonly provider429s: number;
  readonly windows: { start: number; tokens: number; rateLimited: number; localTokens: number }[];
  readonly calls: readonly CallRecord[];
  readonly loadMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The mock provider's quota: QUOTA tokens per WINDOW_MS window, calls of 300 ms. */
async function configureMock(url: string): Promise<void> {
  const put = await fetch(`${url}/admin/config`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      quotaWindowMs: WINDOW_MS,
      tokensPerMinute: QUOTA,
      requestsPerMinute: 100_000,
      timeToFirstTokenMs: { kind: 'fixed', value: 300 },
      perOutputTokenMs: { kind: 'fixed', value: 0 },
      outputTokens: { kind: 'fixed', value: 20 },
    }),
  });
  if (!put.ok) throw new Error(`mock provider config: ${put.status} ${await put.text()}`);
}

interface Replica {
  readonly llm: RateLimitedLlm;
  readonly budget: RedisTokenBudget;
}

/** What the replicas record: every call, and per replica when its budget was on the fallback ([from, to) spans). */
interface Records {
  readonly calls: CallRecord[];
  readonly offRedis: { from: number; to: number }[][];
}

/** REPLICAS wrappers over the mock, each with its own Redis client and a RedisTokenBudget on one key. */
async function createReplicas(redis: RedisServer, mockUrl: string, policy: CentralOutagePolicy, records: Records, clients: BudgetRedisClient[]): Promise<Replica[]> {
  const key = `quotascope:bench:chaos:${process.pid}:${policy}`;
  const replicas: Replica[] = [];
  for (let i = 0; i < REPLICAS; i++) {
    const client = await connectBudgetRedis(redis.url);
    clients.push(client);
    const registry = new Registry();
    const spans = records.offRedis[i];
    const budget = new RedisTokenBudget({
      client,
      name: 'chaos',
      key,
      tokensPerMinute: BUDGET,
      windowMs: WINDOW_MS,
      localShareTokensPerMinute: BUDGET / REPLICAS,
      centralOutage: policy,
      retryRedisAfterMs: 200,
      healthCheckIntervalMs: 200,
      maxPollMs: 100,
      registry,
      onCentralChange: (central) => {
        if (!central) spans.push({ from: Date.now(), to: Number.POSITIVE_INFINITY });
        else if (spans.length > 0) spans[spans.length - 1] = { ...spans[spans.length - 1], to: Date.now() };
      },
    });
    const llm = new RateLimitedLlm({
      delegate: new ProviderGemini({ providerUrl: mockUrl, apiKey: `chaos-${policy}`, model: 'gemini-2.5-flash', httpTimeoutMs: 30_000 }),
      name: 'chaos',
      maxConcurrent: 40,
      budget,
      maxWaitMs: WINDOW_MS / 3,
      backoff: { baseMs: 50, capMs: 3_000 },
      registry,
      onCallEnd: (report: CallReport) => {
        const end = Date.now();
        records.calls.push({ admittedAt: end - report.durationMs + report.waitMs, tokens: report.actualTokens, replica: i, outcome: report.outcome, attempts: report.attempts });
      },
    });
    replicas.push({ llm, budget });
  }
  return replicas;
}

/** Bursts every third of a window, round-robin over the replicas, while the faults are injected; resolves when every call ended. */
async function burstLoad(redis: RedisServer, replicas: readonly Replica[]): Promise<{ started: number; loadMs: number }> {
  const document = documentForTokens(CALL_TOKENS);
  const perBurst = Math.round((OVERLOAD * BUDGET) / CALL_TOKENS / 3);
  const started = Date.now();
  const loadMs = WINDOWS * WINDOW_MS;
  const pending: Promise<unknown>[] = [];
  const faults = FAULTS.map((f) => sleep(f.at * WINDOW_MS).then(() => f.apply(redis)));
  let n = 0;
  for (let at = 0; at < loadMs; at += WINDOW_MS / 3) {
    const wait = started + at - Date.now();
    if (wait > 0) await sleep(wait);
    for (let c = 0; c < perBurst; c++) {
      const { llm } = replicas[n++ % REPLICAS];
      pending.push(
        (async () => {
          for await (const _ of llm.generateContentAsync(fakeRequest(undefined, document))) {
            // drain
          }
        })().catch(() => {}),
      );
    }
  }
  await Promise.all(faults);
  await Promise.all(pending);
  return { started, loadMs };
}

/** The mock's windows over the load, each with the tokens the local shares admitted in it. */
async function windowsOf(mockUrl: string, records: Records, started: number, loadEnd: number): Promise<{ windows: PolicyResult['windows']; provider429s: number }> {
  const record = (await (await fetch(`${mockUrl}/admin/quota/windows`)).json()) as {
    windows: { start: number; tokens: number; requests: number; rateLimited: number }[];
  };
  const isLocal = (call: CallRecord) => records.offRedis[call.replica].some((s) => call.admittedAt >= s.from && call.admittedAt < s.to);
  const local = records.calls.filter((c) => c.attempts > 0 && isLocal(c));
  const windows = record.windows
    .filter((w) => w.start + WINDOW_MS > started && w.start < loadEnd + WINDOW_MS)
    .map((w) => ({
      start: w.start,
      tokens: w.tokens,
      rateLimited: w.rateLimited,
      localTokens: local.filter((c) => c.admittedAt >= w.start && c.admittedAt < w.start + WINDOW_MS).reduce((s, c) => s + c.tokens, 0),
    }));
  return { windows, provider429s: record.windows.reduce((s, w) => s + w.rateLimited, 0) };
}

async function runPolicy(redis: RedisServer, policy: CentralOutagePolicy): Promise<PolicyResult> {
  const mock = await startChild(['cli/quotascope.ts', 'mock-provider', '--port', '0', '--host', '127.0.0.1']);
  const clients: BudgetRedisClient[] = [];
  try {
    await configureMock(mock.url);
    const records: Records = { calls: [], offRedis: Array.from({ length: REPLICAS }, () => []) };
    const replicas = await createReplicas(redis, mock.url, policy, records, clients);
    const { started, loadMs } = await burstLoad(redis, replicas);
    for (const { llm, budget } of replicas) {
      llm.close();
      await budget.close();
    }
    const { windows, provider429s } = await windowsOf(mock.url, records, started, started + loadMs);
    return { policy, provider429s, windows, calls: records.calls, loadMs };
  } finally {
    for (const c of clients) c.destroy();
    await stopChild(mock.child);
  }
}

function rowOf(r: PolicyResult, baseline: boolean): BenchRow {
  const ok = r.calls.filter((c) => c.outcome === 'ok').length;
  const maxTokens = Math.max(0, ...r.windows.map((w) => w.tokens));
  const localTokens = r.windows.reduce((s, w) => s + w.localTokens, 0);
  // The fail-open bound, window by window: the central limit plus what the local shares admitted.
  const boundHeld = r.windows.every((w) => w.tokens <= BUDGET + w.localTokens + CALL_TOKENS);
  return {
    group: GROUP,
    name: r.policy,
    baseline,
    opsPerSec: Math.max(1e-9, ok / (r.loadMs / 1000)),
    extra: {
      provider429s: r.provider429s,
      okCalls: ok,
      calls: r.calls.length,
      refusedOrFailed: r.calls.filter((c) => c.outcome === 'error').length,
      timeouts: r.calls.filter((c) => c.outcome === 'timeout').length,
      maxQuotaUse: Math.round((maxTokens / QUOTA) * 1000) / 1000,
      localShareTokens: localTokens,
      boundHeld: boundHeld ? 'yes' : 'no',
      tokensPerWindow: r.windows.map((w) => w.tokens).join(' '),
      localTokensPerWindow: r.windows.map((w) => w.localTokens).join(' '),
      rateLimitedPerWindow: r.windows.map((w) => w.rateLimited).join(' '),
    },
  };
}

export default async function redisChaos(): Promise<BenchRow[]> {
  setLogLevel(LogLevel.ERROR); // ADK logs every model request at INFO
  const redis = await startRedisServer();
  try {
    const closed = await runPolicy(redis, 'fail-closed');
    redis.resume();
    const open = await runPolicy(redis, 'fail-open');
    const rows = [rowOf(closed, true), rowOf(open, false)];
    const lines = [
      `redis-chaos: ${GROUP}`,
      `  faults (window): ${FAULTS.map((f) => `${f.what} @${f.at}`).join(', ')}; quota ${QUOTA} tokens/window, budget ${BUDGET}, local share ${BUDGET / REPLICAS} per replica`,
    ];
    for (const row of rows) {
      const e = row.extra as Record<string, string | number>;
      lines.push(`  ${row.name}: ${e.provider429s} provider 429s, ${e.okCalls}/${e.calls} calls ok, max quota use ${e.maxQuotaUse}, bound (budget + local share admitted) held: ${e.boundHeld}`);
      lines.push(`    tokens/window:       ${e.tokensPerWindow}`);
      lines.push(`    local-share tokens:  ${e.localTokensPerWindow}`);
      lines.push(`    429s/window:         ${e.rateLimitedPerWindow}`);
    }
    process.stdout.write(`${lines.join('\n')}\n\n`);
    return rows;
  } finally {
    await redis.close();
  }
}
