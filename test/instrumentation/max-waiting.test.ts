// maxWaiting: a cap on the calls queued for a permit or for budget. Property on fake time:
// random arrivals, latencies, token sizes and aborts through a wrapper with few permits and a
// small budget; after every step the waiting calls never exceed maxWaiting, the permits held
// are exactly those of calls in the provider or queued for budget (a refused call holds
// none), and every refusal is a RateLimitTimeout of reason queue_full counted under it.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../instrumentation/clock.ts';
import { type CallReport, ERROR_CODES, limiterMetrics, RateLimitedLlm, RateLimitTimeout, TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm, fakeRequest as request, ManualClock, textResponse } from '../../instrumentation/testing.ts';
import { consume, metricValue } from './helpers.ts';

const callArb = fc.record({
  gapMs: fc.integer({ min: 0, max: 100 }),
  latencyMs: fc.integer({ min: 1, max: 400 }),
  tokens: fc.integer({ min: 10, max: 600 }),
  fails: fc.boolean(),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }),
});

describe('maxWaiting', () => {
  it('property: waiting never exceeds maxWaiting, refused calls hold no permit, refusals are queue_full', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(callArb, { minLength: 1, maxLength: 20 }),
        async (permits, maxWaiting, calls) => {
          const clock = new ManualClock();
          const registry = new Registry();
          const budget = new TokenBudget(1_200, { clock, rollingWindow: false }); // 20 tokens/s: budget waits happen
          let active = 0;
          const reachedProvider = new Set<number>();
          const delegate = new FakeLlm(async function* (call) {
            const id = Number(call.request.config?.labels?.adk_agent_name?.slice(1));
            reachedProvider.add(id);
            active++;
            try {
              await sleep(clock, calls[id].latencyMs, call.signal);
              if (calls[id].fails) throw new Error('boom');
              yield textResponse('done', calls[id].tokens);
            } finally {
              active--;
            }
          });
          const reports: CallReport[] = [];
          const llm = new RateLimitedLlm({
            delegate,
            name: 'capped',
            maxConcurrent: permits,
            budget,
            maxWaiting,
            estimatedTokens: (req) => calls[Number(req.config?.labels?.adk_agent_name?.slice(1))].tokens,
            maxWaitMs: 5_000,
            registry,
            clock,
            onCallEnd: (r) => reports.push(r),
          });
          const check = () => {
            const snapshot = llm.snapshot();
            expect(snapshot.waiting).toBeLessThanOrEqual(maxWaiting);
            // Permits are held by calls in the provider and by calls queued for budget, nobody else.
            expect(snapshot.permitsInUse).toBe(active + budget.waiting);
          };
          const results: Promise<{ error?: unknown }>[] = [];
          for (let i = 0; i < calls.length; i++) {
            await clock.advance(calls[i].gapMs);
            check();
            const controller = new AbortController();
            const abortAfter = calls[i].abortAfterMs;
            if (abortAfter !== undefined) clock.setTimeout(() => controller.abort(new Error('caller left')), abortAfter);
            results.push(consume(llm.generateContentAsync(request(`c${i}`), false, controller.signal)));
            await clock.advance(0);
            check();
          }
          for (let step = 0; step < 2_000 && reports.length < calls.length; step++) {
            await clock.advance(10);
            check();
          }
          const outcomes = await Promise.all(results);

          expect(reports).toHaveLength(calls.length);
          let queueFull = 0;
          outcomes.forEach(({ error }, id) => {
            if (!(error instanceof RateLimitTimeout) || error.reason !== 'queue_full') return;
            queueFull++;
            expect(reachedProvider.has(id)).toBe(false);
            expect(JSON.parse(error.message).error).toMatchObject({ code: ERROR_CODES.timeout, reason: 'queue_full' });
          });
          expect(await metricValue(registry, limiterMetrics.timeouts.name, { limiter: 'capped', reason: 'queue_full' })).toBe(queueFull);
          expect(llm.snapshot()).toMatchObject({ permitsInUse: 0, waiting: 0 });
          llm.close();
        },
      ),
      { numRuns: 80 },
    );
  });

  it('a burst beyond permits + maxWaiting: the extra calls are refused at once, the rest are served', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const delegate = new FakeLlm(async function* (call) {
      await sleep(clock, 100, call.signal);
      yield textResponse('done', 10);
    });
    const llm = new RateLimitedLlm({ delegate, name: 'burst', maxConcurrent: 2, maxWaiting: 3, registry, clock });
    const results = Array.from({ length: 8 }, (_, i) => consume(llm.generateContentAsync(request(`a${i}`))));
    await clock.advance(0);
    expect(llm.snapshot()).toMatchObject({ permitsInUse: 2, waiting: 3 });
    await clock.advance(1_000);
    const outcomes = await Promise.all(results);
    const refused = outcomes.filter((o) => o.error instanceof RateLimitTimeout && o.error.reason === 'queue_full');
    expect(refused).toHaveLength(3);
    expect(outcomes.filter((o) => o.error === undefined)).toHaveLength(5);
    expect(await metricValue(registry, limiterMetrics.timeouts.name, { limiter: 'burst', reason: 'queue_full' })).toBe(3);
    llm.close();
  });

  it('is validated: a bound, an integer', () => {
    const delegate = new FakeLlm(async function* () {});
    for (const maxWaiting of [0, 1.5, 1e9]) {
      expect(() => new RateLimitedLlm({ delegate, name: 'x', maxConcurrent: 1, maxWaiting, registry: new Registry() })).toThrow(/maxWaiting/);
    }
  });
});
