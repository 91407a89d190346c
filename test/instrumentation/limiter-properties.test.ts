// Property-based: random interleavings of many concurrent calls through the wrapper, with
// random latencies, failures (429s, errors, hangs) and aborts, on fake time.
import { ApiError } from '@google/genai';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { sleep } from '../../instrumentation/clock.ts';
import { type CallReport, RateLimitedLlm, TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm, fakeRequest as request, ManualClock, textResponse } from '../../instrumentation/testing.ts';
import { consume } from './helpers.ts';

type Behaviour = 'ok' | 'error' | 'rate_limited_once' | 'rate_limited_always' | 'hang';

const callArb = fc.record({
  gapMs: fc.integer({ min: 0, max: 300 }),
  latencyMs: fc.integer({ min: 1, max: 500 }),
  behaviour: fc.constantFrom<Behaviour>('ok', 'ok', 'ok', 'error', 'rate_limited_once', 'rate_limited_always', 'hang'),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 800 }), { nil: undefined }),
  tokens: fc.integer({ min: 10, max: 400 }),
});

function rateLimited(): ApiError {
  return new ApiError({ status: 429, message: JSON.stringify({ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }) });
}

describe('limiter properties', () => {
  it('in-use never exceeds the limit, returns to 0, admission is FIFO, tokens settled once per admitted call', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(callArb, { minLength: 1, maxLength: 15 }), async (limit, calls) => {
        const clock = new ManualClock();
        const budget = new TokenBudget(6_000, { clock });
        const reconcile = vi.spyOn(budget, 'reconcile');
        const admitted: number[] = [];
        let active = 0;
        let maxActive = 0;
        const attemptsSeen = new Map<number, number>();
        const delegate = new FakeLlm(async function* (call) {
          const id = Number(call.request.config?.labels?.adk_agent_name?.slice(1));
          const spec = calls[id];
          const attempt = attemptsSeen.get(id) ?? 0;
          attemptsSeen.set(id, attempt + 1);
          if (attempt === 0) {
            admitted.push(id);
            active++;
            maxActive = Math.max(maxActive, active);
          }
          if (spec.behaviour === 'hang') await new Promise(() => {});
          await sleep(clock, spec.latencyMs, call.signal);
          if (spec.behaviour === 'error') throw new Error('boom');
          if (spec.behaviour === 'rate_limited_always' || (spec.behaviour === 'rate_limited_once' && attempt === 0)) {
            throw rateLimited();
          }
          yield textResponse('partial', Math.floor(spec.tokens / 2), true);
          await sleep(clock, 1, call.signal);
          yield textResponse('done', spec.tokens, false);
        });
        const reports: CallReport[] = [];
        const llm = new RateLimitedLlm({
          delegate,
          name: 'prop',
          maxConcurrent: limit,
          budget,
          estimatedTokens: (req) => calls[Number(req.config?.labels?.adk_agent_name?.slice(1))].tokens,
          maxWaitMs: 2_000,
          maxCallMs: 3_000,
          backoff: { baseMs: 10, capMs: 100 },
          retryBudget: { minRetries: 1_000, clock },
          registry: new Registry(),
          clock,
          random: () => 0.5,
          onCallEnd: (r) => {
            const id = Number(r.agent.slice(1));
            if (r.attempts > 0) active--;
            reports.push(r);
            expect(id).toBeGreaterThanOrEqual(0);
          },
        });
        const running: Promise<unknown>[] = [];
        for (let i = 0; i < calls.length; i++) {
          await clock.advance(calls[i].gapMs);
          const controller = new AbortController();
          const abortAfter = calls[i].abortAfterMs;
          if (abortAfter !== undefined) clock.setTimeout(() => controller.abort(new Error('abort')), abortAfter);
          running.push(consume(llm.generateContentAsync(request(`c${i}`), true, controller.signal)));
        }
        for (let step = 0; step < 100 && reports.length < calls.length; step++) await clock.advance(500);
        await Promise.all(running);

        expect(reports).toHaveLength(calls.length);
        expect(maxActive).toBeLessThanOrEqual(limit);
        expect(llm.snapshot()).toMatchObject({ permitsInUse: 0, waiting: 0 });
        expect(active).toBe(0);
        // FIFO: calls were admitted in the order they arrived.
        expect(admitted).toEqual([...admitted].sort((a, b) => a - b));
        // Every admitted call settled its tokens exactly once.
        expect(reconcile).toHaveBeenCalledTimes(admitted.length);
        llm.close();
      }),
      { numRuns: 60 },
    );
  });
});
