// Request admission in central mode: two replicas, each a RateLimitedLlm over one
// RedisTokenBudget key on a real redis-server, admit review trees whole (held at the door,
// counted call by call when used). Whatever the arrival, every request ends whole or is shed
// before any call, and no window of the provider's counts holds more than the shared limit.
import { type BaseAgent, type Event, InMemoryRunner, LlmAgent, LogLevel, ParallelAgent, SequentialAgent, setLogLevel } from '@google/adk';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimitedLlm, RequestAdmission, RequestShed } from '../../instrumentation/index.ts';
import { type BudgetRedisClient, connectBudgetRedis, RedisTokenBudget } from '../../instrumentation/redis.ts';
import { FakeLlm, textResponse } from '../../instrumentation/testing.ts';
import { type RedisServer, startRedisServer } from '../support/redis-server.ts';
import { delay } from './helpers.ts';

setLogLevel(LogLevel.ERROR);

const WINDOW_MS = 1_000;
const LIMIT = 12_000;
const TOKENS_PER_CALL = 1_000;

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.close();
});

function reviewTree(model: RateLimitedLlm): BaseAgent {
  const reviewers = [1, 2, 3, 4].map((i) => new LlmAgent({ name: `reviewer_${i}`, model, instruction: `Review aspect ${i}.`, outputKey: `review_${i}` }));
  return new SequentialAgent({
    name: 'review',
    subAgents: [new ParallelAgent({ name: 'reviewers', subAgents: reviewers }), new LlmAgent({ name: 'synthesizer', model, instruction: 'Combine {review_1?} {review_2?} {review_3?} {review_4?}' })],
  });
}

/** A replica: its own Redis client, budget, wrapper, tree and request admission; `calls` records when the provider saw each call. */
async function replica(key: string, calls: number[], clients: BudgetRedisClient[]) {
  const client = await connectBudgetRedis(redis.url);
  clients.push(client);
  const registry = new Registry();
  const budget = new RedisTokenBudget({ client, name: 'gemini', key, tokensPerMinute: LIMIT, windowMs: WINDOW_MS, countedTokens: 'total', maxPollMs: 20, registry });
  const delegate = new FakeLlm(async function* (call) {
    calls.push(performance.now());
    await delay(20, call.signal);
    yield textResponse('ok', TOKENS_PER_CALL);
  });
  // The calls' time is stated (20 ms): a cold replica plans its deadline with it, not the 20 s default.
  const llm = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent: 8, budget, registry, maxWaitMs: 3_000, expectedCallMs: 20 });
  return { budget, llm, tree: reviewTree(llm), admission: new RequestAdmission({ requestDeadlineMs: 2_500 }) };
}

async function runRequest(r: Awaited<ReturnType<typeof replica>>, tag: string): Promise<'whole' | 'shed' | 'partial'> {
  const runner = new InMemoryRunner({ agent: r.tree, appName: 'test' });
  const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
  const events: Event[] = [];
  try {
    for await (const event of r.admission.runAsync(runner, { userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: tag }] } })) events.push(event);
  } catch (error) {
    if (error instanceof RequestShed) return events.length === 0 ? 'shed' : 'partial';
    return 'partial';
  }
  const answered = events.filter((e) => !e.partial && e.content?.parts?.some((p) => p.text === 'ok')).length;
  return answered === 5 ? 'whole' : 'partial';
}

describe('RequestAdmission on a RedisTokenBudget shared by two replicas', () => {
  it('property: requests end whole or are shed before any call, and no window counts more than the shared limit', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ replica: fc.constantFrom(0, 1), gapMs: fc.integer({ min: 0, max: 120 }) }), { minLength: 4, maxLength: 14 }), async (arrivals) => {
        const calls: number[] = [];
        const clients: BudgetRedisClient[] = [];
        const key = `test:admission:${process.pid}:${++run}`;
        const replicas = [await replica(key, calls, clients), await replica(key, calls, clients)];
        try {
          // Each replica learns its tree's calls on a first request (admitted call by call).
          for (const r of replicas) expect(await runRequest(r, 'warm-up')).toBe('whole');
          await delay(WINDOW_MS + 20); // the warm-ups leave the window
          calls.length = 0;
          const outcomes: Promise<string>[] = [];
          for (const [i, a] of arrivals.entries()) {
            outcomes.push(runRequest(replicas[a.replica], `r${i}`));
            if (a.gapMs > 0) await delay(a.gapMs);
          }
          const ended = await Promise.all(outcomes);
          expect(ended.filter((o) => o === 'partial')).toEqual([]);
          expect(ended.filter((o) => o === 'whole').length).toBeGreaterThan(0);
          // The provider's counts: in any span a little shorter than the window (admission runs a few ms ahead of the call).
          for (const at of calls) {
            const inWindow = calls.filter((t) => t >= at && t < at + WINDOW_MS - 50).length * TOKENS_PER_CALL;
            expect(inWindow).toBeLessThanOrEqual(LIMIT);
          }
        } finally {
          for (const r of replicas) {
            r.llm.close();
            await r.budget.close();
          }
          for (const c of clients) c.destroy();
        }
      }),
      { numRuns: 5 },
    );
  }, 120_000);
});
