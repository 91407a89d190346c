// The permit safety net is one sweeper timer per wrapper (not a timer per call), and the
// hot-path counters are tallies flushed at collect: both must behave exactly like before.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { MaxCallTimeExceeded } from '../../instrumentation/errors.ts';
import { type CallReport, createLimiterMetrics, limiterMetrics, RateLimitedLlm } from '../../instrumentation/index.ts';
import { type HeldCall, PermitSweeper } from '../../instrumentation/permit-sweeper.ts';
import { FakeLlm, fakeRequest as request, ManualClock, textResponse } from '../../instrumentation/testing.ts';
import { consume, metricValue } from './helpers.ts';

function heldCall(deadline: number, reclaimed: number[], id: number): HeldCall {
  return { deadline, reclaim: () => void reclaimed.push(id) };
}

describe('PermitSweeper', () => {
  it('keeps one timer for many held calls and reclaims each exactly at its deadline', async () => {
    const clock = new ManualClock();
    const sweeper = new PermitSweeper(clock);
    const reclaimed: number[] = [];
    const at: number[] = [];
    const calls = [300, 100, 200, 100].map((deadline, id): HeldCall => ({
      deadline,
      reclaim: () => {
        reclaimed.push(id);
        at.push(clock.now());
      },
    }));
    for (const call of calls) sweeper.add(call);
    expect(clock.pendingTimers).toBe(1);
    sweeper.delete(calls[2]); // ended before its deadline: never reclaimed
    await clock.advance(99);
    expect(reclaimed).toEqual([]);
    await clock.advance(1);
    expect(reclaimed).toEqual([1, 3]);
    expect(at).toEqual([100, 100]);
    expect(clock.pendingTimers).toBe(1); // re-armed for the call due at 300
    await clock.advance(1_000);
    expect(reclaimed).toEqual([1, 3, 0]);
    expect(at).toEqual([100, 100, 300]);
    expect(sweeper.size).toBe(0);
    expect(clock.pendingTimers).toBe(0); // nothing held: no timer
    sweeper.close();
  });

  it('close() stops the timer; a later add arms it again', async () => {
    const clock = new ManualClock();
    const sweeper = new PermitSweeper(clock);
    const reclaimed: number[] = [];
    sweeper.add(heldCall(50, reclaimed, 1));
    sweeper.close();
    expect(clock.pendingTimers).toBe(0);
    sweeper.add(heldCall(80, reclaimed, 2));
    await clock.advance(100);
    expect(reclaimed).toEqual([1, 2]);
  });

  it('property: a call is reclaimed iff still held at its deadline, at that time, once', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), holdMs: fc.integer({ min: 0, max: 500 }) }),
      fc.record({ kind: fc.constant('end' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 300 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const clock = new ManualClock();
        const sweeper = new PermitSweeper(clock);
        const calls: { deadline: number; endedAt?: number; reclaimedAt: number[] }[] = [];
        const handles: HeldCall[] = [];
        for (const o of ops) {
          if (o.kind === 'add') {
            const call = { deadline: clock.now() + o.holdMs, reclaimedAt: [] as number[] };
            calls.push(call);
            const handle: HeldCall = { deadline: call.deadline, reclaim: () => call.reclaimedAt.push(clock.now()) };
            handles.push(handle);
            sweeper.add(handle);
          } else if (o.kind === 'end' && calls.length > 0) {
            const i = o.pick % calls.length;
            if (calls[i].endedAt === undefined && calls[i].reclaimedAt.length === 0) {
              calls[i].endedAt = clock.now();
              sweeper.delete(handles[i]);
            }
          } else if (o.kind === 'advance') {
            await clock.advance(o.ms);
          }
        }
        await clock.advance(1_000);
        for (const call of calls) {
          const heldAtDeadline = call.endedAt === undefined || call.endedAt > call.deadline;
          // A call ended at or before its deadline on fake time is never reclaimed; one still held is, exactly then.
          if (call.endedAt !== undefined && call.endedAt <= call.deadline && call.reclaimedAt.length === 0) continue;
          expect(heldAtDeadline).toBe(true);
          expect(call.reclaimedAt).toEqual([call.deadline]);
        }
        expect(sweeper.size).toBe(0);
        expect(clock.pendingTimers).toBe(0);
      }),
      { numRuns: 150 },
    );
  });
});

describe('RateLimitedLlm with the shared sweeper', () => {
  it('reclaims every hung call at maxCallMs on fake time, with one timer for all of them', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const reports: CallReport[] = [];
    const llm = new RateLimitedLlm({
      delegate: new FakeLlm(async function* (call) {
        yield textResponse('first', 5, true);
        if (call.index === 0) return; // the first call ends well before its deadline
        await new Promise(() => {}); // the others hang, ignoring their abort signal
      }),
      name: 'sweep',
      maxConcurrent: 5,
      estimatedTokens: 10,
      maxCallMs: 1_000,
      registry,
      clock,
      onCallEnd: (r) => reports.push(r),
    });
    const done = [0, 1, 2, 3, 4].map((i) => consume(llm.generateContentAsync(request(`a${i}`), true)));
    await clock.advance(0);
    expect(llm.snapshot().permitsInUse).toBe(4);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(999);
    expect(llm.snapshot().permitsInUse).toBe(4);
    await clock.advance(1);
    expect(llm.snapshot().permitsInUse).toBe(0);
    const results = await Promise.all(done);
    expect(results[0].error).toBeUndefined();
    for (const r of results.slice(1)) expect(r.error).toBeInstanceOf(MaxCallTimeExceeded);
    expect(await metricValue(registry, limiterMetrics.permitsReclaimed.name, { limiter: 'sweep' })).toBe(4);
    expect(reports.map((r) => r.outcome).sort()).toEqual(['error', 'error', 'error', 'error', 'ok']);
    llm.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('hot-path counters are tallied and read back exactly (also after close, and for zero increments)', async () => {
    const registry = new Registry();
    const llm = new RateLimitedLlm({
      delegate: new FakeLlm(async function* () {
        yield textResponse('ok', 7);
      }),
      name: 'tally',
      maxConcurrent: 2,
      estimatedTokens: 0,
      countedTokens: 'total', // 7 tokens per response, all counted
      registry,
    });
    for (let i = 0; i < 3; i++) await consume(llm.generateContentAsync(request('x')));
    const reserved = limiterMetrics.tokensReserved.name;
    expect(await metricValue(registry, limiterMetrics.calls.name, { limiter: 'tally', agent: 'x', outcome: 'ok' })).toBe(3);
    expect(await metricValue(registry, limiterMetrics.tokensActual.name, { agent: 'x' })).toBe(21);
    // Reserving 0 tokens still creates the series, as prom-client's inc(labels, 0) did.
    expect(await registry.getSingleMetricAsString(reserved)).toContain(`${reserved}{limiter="tally",agent="x"} 0`);
    llm.close();
    await consume(llm.generateContentAsync(request('x')));
    // A second read does not add the same calls again.
    expect(await metricValue(registry, limiterMetrics.calls.name, { outcome: 'ok' })).toBe(4);
    expect(await metricValue(registry, limiterMetrics.calls.name, { outcome: 'ok' })).toBe(4);
    expect(() => createLimiterMetrics(registry).tally('calls', { limiter: 'tally', agent: 'y', outcome: 'ok' }).add(-1)).toThrow(
      /decrease/,
    );
  });
});
