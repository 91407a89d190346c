// Traffic-class lanes in FairSemaphore (per-lane caps, FIFO among eligible waiters) and
// RateLimitedLlm's laneOf, on fake time.
import { AsyncLocalStorage } from 'node:async_hooks';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FairSemaphore, RateLimitedLlm } from '../../instrumentation/index.ts';
import type { Permit } from '../../instrumentation/semaphore.ts';
import { FakeLlm, fakeRequest as request, ManualClock, textResponse } from '../../instrumentation/testing.ts';
import { consume } from './helpers.ts';

/** Let granted promises settle (the fake clock flushes microtasks). */
const settle = (clock: ManualClock) => clock.advance(0);

function track(promise: Promise<Permit>): { permit?: Permit; error?: unknown } {
  const box: { permit?: Permit; error?: unknown } = {};
  promise.then(
    (p) => {
      box.permit = p;
    },
    (e: unknown) => {
      box.error = e;
    },
  );
  return box;
}

describe('FairSemaphore lanes', () => {
  it('a lane at its cap is skipped: the waiters behind it are admitted, and it keeps its place', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(3, { clock, laneLimits: { batch: 1 } });
    const b1 = sem.tryAcquire({ lane: 'batch' });
    expect(b1).toBeDefined();
    expect(sem.tryAcquire({ lane: 'batch' })).toBeUndefined(); // at its cap, although 2 permits are free
    const b2 = track(sem.acquire({ lane: 'batch' }));
    const b3 = track(sem.acquire({ lane: 'batch' }));
    const i1 = track(sem.acquire({ lane: 'interactive' }));
    const plain = track(sem.acquire());
    await settle(clock);
    // The parked batch waiters do not block the interactive and unlaned calls behind them.
    expect([b2.permit, b3.permit]).toEqual([undefined, undefined]);
    expect(i1.permit && plain.permit).toBeDefined();
    expect(sem.inUse).toBe(3);
    expect(sem.laneInUse('batch')).toBe(1);
    expect(sem.laneInUse('interactive')).toBe(1);
    expect(sem.waiting).toBe(2);

    // A freed permit from another lane cannot go to batch (still at its cap) and nobody else waits.
    i1.permit?.release();
    await settle(clock);
    expect(sem.inUse).toBe(2);
    expect(b2.permit).toBeUndefined();
    // A newcomer of another lane may take it: the only waiters are ineligible.
    const i2 = sem.tryAcquire({ lane: 'interactive' });
    expect(i2).toBeDefined();
    // The batch holder leaving admits the FIRST batch waiter (FIFO within the lane).
    b1?.release();
    await settle(clock);
    expect(b2.permit).toBeDefined();
    expect(b3.permit).toBeUndefined();
    b2.permit?.release();
    await settle(clock);
    expect(b3.permit).toBeDefined();
    b3.permit?.release();
    i2?.release();
    plain.permit?.release();
    expect([sem.inUse, sem.laneInUse('batch'), sem.laneInUse('interactive'), sem.waiting]).toEqual([0, 0, 0, 0]);
  });

  it('a release skips a parked lane at the head of the queue and admits the next eligible waiter', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(2, { clock, laneLimits: { batch: 1 } });
    sem.tryAcquire({ lane: 'batch' });
    const i1 = sem.tryAcquire({ lane: 'interactive' });
    const b2 = track(sem.acquire({ lane: 'batch' })); // full: queued first
    const i2 = track(sem.acquire({ lane: 'interactive' }));
    await settle(clock);
    expect(sem.waiting).toBe(2);
    i1?.release(); // the head (batch) is at its cap: the interactive waiter behind it goes
    await settle(clock);
    expect(b2.permit).toBeUndefined();
    expect(i2.permit).toBeDefined();
    expect(sem.inUse).toBe(2);
  });

  it('without caps, lanes change nothing: strict FIFO, a laned waiter blocks everyone behind it', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(1, { clock });
    const held = sem.tryAcquire({ lane: 'batch' });
    const order: string[] = [];
    const waits = ['batch', 'interactive', undefined, 'batch'].map((lane, i) =>
      sem.acquire({ lane }).then((p) => {
        order.push(`${i}:${lane}`);
        return p;
      }),
    );
    expect(sem.tryAcquire({ lane: 'interactive' })).toBeUndefined(); // no barging
    held?.release();
    for (const w of waits) (await w).release();
    expect(order).toEqual(['0:batch', '1:interactive', '2:undefined', '3:batch']);
    expect(sem.laneInUse('batch')).toBe(0);
  });

  it('setLaneLimit at run time: raising admits parked waiters, lowering lets holders finish, undefined removes the cap', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(4, { clock });
    const held = [sem.tryAcquire({ lane: 'batch' }), sem.tryAcquire({ lane: 'batch' }), sem.tryAcquire({ lane: 'batch' })];
    sem.setLaneLimit('batch', 2); // 3 held above the new cap: nobody is evicted
    expect(sem.laneLimit('batch')).toBe(2);
    expect(sem.laneInUse('batch')).toBe(3);
    const next = track(sem.acquire({ lane: 'batch' }));
    await settle(clock);
    expect(next.permit).toBeUndefined();
    held[0]?.release(); // 2 held: still at the cap
    await settle(clock);
    expect(next.permit).toBeUndefined();
    held[1]?.release(); // 1 held: the parked waiter goes at once
    await settle(clock);
    expect(next.permit).toBeDefined();
    expect(sem.laneInUse('batch')).toBe(2);
    const more = track(sem.acquire({ lane: 'batch' }));
    await settle(clock);
    expect(more.permit).toBeUndefined();
    sem.setLaneLimit('batch', 3); // raising admits at once
    await settle(clock);
    expect(more.permit).toBeDefined();
    expect(sem.laneInUse('batch')).toBe(3);
  });

  it('setLaneLimit(undefined) removes the cap and admits the parked waiters', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(3, { clock, laneLimits: { batch: 1 } });
    sem.tryAcquire({ lane: 'batch' });
    const waits = [track(sem.acquire({ lane: 'batch' })), track(sem.acquire({ lane: 'batch' }))];
    await settle(clock);
    expect(waits.map((w) => w.permit)).toEqual([undefined, undefined]);
    sem.setLaneLimit('batch', undefined);
    await settle(clock);
    expect(waits.every((w) => w.permit)).toBe(true);
    expect(sem.laneLimit('batch')).toBeUndefined();
    expect(sem.laneInUse('batch')).toBe(3);
  });

  it('parked waiters still time out and abort', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(2, { clock, laneLimits: { batch: 1 } });
    sem.tryAcquire({ lane: 'batch' });
    const timedOut = track(sem.acquire({ lane: 'batch', deadline: 100 }));
    const controller = new AbortController();
    const aborted = track(sem.acquire({ lane: 'batch', signal: controller.signal }));
    controller.abort(new Error('bye'));
    await clock.advance(100);
    expect((timedOut.error as Error).name).toBe('DeadlineExceeded');
    expect((aborted.error as Error).message).toBe('bye');
    expect(sem.waiting).toBe(0);
    expect(sem.inUse).toBe(1);
  });

  it('rejects bad caps naming the lane', () => {
    expect(() => new FairSemaphore(2, { laneLimits: { batch: 0 } })).toThrow(/lane "batch" limit must be an integer >= 1/);
    expect(() => new FairSemaphore(2).setLaneLimit('batch', 1.5)).toThrow(/lane "batch" limit/);
  });

  it('keeps the held-time integral exact with parked lanes', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(2, { clock, laneLimits: { batch: 1 } });
    const b1 = sem.tryAcquire({ lane: 'batch' });
    const b2 = track(sem.acquire({ lane: 'batch' }));
    await clock.advance(1000); // 1 held for 1 s (1 free permit that batch may not use)
    const i1 = sem.tryAcquire({ lane: 'interactive' });
    await clock.advance(1000); // 2 held for 1 s
    b1?.release(); // b2 admitted at this instant: still 2 held
    await clock.advance(500);
    b2.permit?.release();
    i1?.release();
    await clock.advance(1000);
    expect(sem.heldPermitSeconds).toBeCloseTo(1 + 2 + 1, 9);
  });
});

type Op =
  | { kind: 'acquire'; lane: string | undefined; deadlineMs: number | undefined }
  | { kind: 'release'; pick: number }
  | { kind: 'abort'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'setLaneLimit'; lane: string; limit: number | undefined };

const LANES = ['batch', 'interactive', 'bulk'] as const;
// Weighted towards the capped lane, so parked heads with eligible waiters behind are common.
const laneArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant<string | undefined>('batch') },
  { weight: 2, arbitrary: fc.constantFrom<string | undefined>('interactive', 'bulk', undefined) },
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('acquire' as const), lane: laneArb, deadlineMs: fc.option(fc.integer({ min: 1, max: 300 }), { nil: undefined, freq: 2 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 200 }) }) },
  // Caps only grow or go away here: lowering one lets holders finish above it, by design.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('setLaneLimit' as const), lane: fc.constantFrom(...LANES), limit: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }) }) },
);

interface Req {
  id: number;
  lane: string | undefined;
  state: 'waiting' | 'held' | 'released' | 'left';
  permit?: Permit;
  controller: AbortController;
}

describe('FairSemaphore lanes: property over random interleavings', () => {
  it('in use ≤ limit, lane in use ≤ cap, FIFO within each lane, no eligible waiter left while a permit is free, all back to 0', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.record({ batch: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined, freq: 6 }), bulk: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }) }),
        fc.array(opArb, { minLength: 1, maxLength: 60 }),
        async (limit, caps, ops) => {
          const clock = new ManualClock();
          const laneLimits: Record<string, number> = {};
          for (const [lane, cap] of Object.entries(caps)) if (cap !== undefined) laneLimits[lane] = cap;
          const sem = new FairSemaphore(limit, { clock, laneLimits });
          const capOf = new Map(Object.entries(laneLimits));
          const reqs: Req[] = [];
          const grantOrder: number[] = [];
          let heldMs = 0;

          const check = () => {
            const held = reqs.filter((r) => r.state === 'held');
            expect(sem.inUse).toBe(held.length);
            expect(sem.inUse).toBeLessThanOrEqual(limit);
            for (const lane of LANES) {
              const n = held.filter((r) => r.lane === lane).length;
              expect(sem.laneInUse(lane)).toBe(n);
              const cap = capOf.get(lane);
              if (cap !== undefined) expect(n).toBeLessThanOrEqual(cap);
            }
            const waiting = reqs.filter((r) => r.state === 'waiting');
            expect(sem.waiting).toBe(waiting.length);
            // Work-conserving: a free permit means every waiter's lane is at its cap.
            if (sem.inUse < limit) {
              for (const w of waiting) {
                const cap = w.lane === undefined ? undefined : capOf.get(w.lane);
                expect(cap !== undefined && sem.laneInUse(w.lane as string) >= cap).toBe(true);
              }
            }
          };

          const start = (lane: string | undefined, deadlineMs: number | undefined) => {
            const r: Req = { id: reqs.length, lane, state: 'waiting', controller: new AbortController() };
            reqs.push(r);
            sem
              .acquire({ lane, signal: r.controller.signal, deadline: deadlineMs === undefined ? undefined : clock.now() + deadlineMs })
              .then(
                (p) => {
                  r.state = 'held';
                  r.permit = p;
                  grantOrder.push(r.id);
                },
                () => {
                  r.state = 'left';
                },
              );
          };

          for (const op of ops) {
            if (op.kind === 'acquire') start(op.lane, op.deadlineMs);
            else if (op.kind === 'release') {
              const held = reqs.filter((r) => r.state === 'held');
              const r = held[op.pick % Math.max(1, held.length)];
              if (r) {
                r.permit?.release();
                r.state = 'released';
              }
            } else if (op.kind === 'abort') {
              const waiting = reqs.filter((r) => r.state === 'waiting');
              waiting[op.pick % Math.max(1, waiting.length)]?.controller.abort(new Error('gone'));
            } else if (op.kind === 'advance') {
              // inUse only changes at acquire/release: a leaving waiter frees nothing.
              heldMs += reqs.filter((r) => r.state === 'held').length * op.ms;
              await clock.advance(op.ms);
            } else {
              // Never below what the lane holds now or its current cap.
              const cap = op.limit === undefined ? undefined : Math.max(op.limit, sem.laneInUse(op.lane), capOf.get(op.lane) ?? 0);
              sem.setLaneLimit(op.lane, cap);
              if (cap === undefined) capOf.delete(op.lane);
              else capOf.set(op.lane, cap);
            }
            await settle(clock);
            check();
          }

          // FIFO within each lane: grants of one lane follow request order.
          for (const lane of [...LANES, undefined]) {
            const ids = grantOrder.filter((id) => reqs[id]?.lane === lane);
            expect(ids).toEqual([...ids].sort((a, b) => a - b));
          }
          expect(sem.heldPermitSeconds * 1000).toBeCloseTo(heldMs, 6);

          // Drain: release every holder until nobody waits; everything returns to 0.
          for (let guard = 0; guard < 1000; guard++) {
            const held = reqs.filter((r) => r.state === 'held');
            if (held.length === 0) break;
            for (const r of held) {
              r.permit?.release();
              r.state = 'released';
            }
            await settle(clock);
            check();
          }
          expect(reqs.some((r) => r.state === 'waiting' || r.state === 'held')).toBe(false);
          expect([sem.inUse, sem.waiting, ...LANES.map((l) => sem.laneInUse(l))]).toEqual([0, 0, 0, 0, 0]);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('RateLimitedLlm laneOf', () => {
  it('reads the lane in the caller async context and passes it to the semaphore', async () => {
    const clock = new ManualClock();
    const classOf = new AsyncLocalStorage<string>();
    const gates: (() => void)[] = [];
    const inFlightByLane = new Map<string, number>();
    const peakByLane = new Map<string, number>();
    // The delegate runs inside the call's context too: count what reaches it per lane.
    const delegate = new FakeLlm(async function* () {
      const lane = classOf.getStore() ?? 'none';
      const now = (inFlightByLane.get(lane) ?? 0) + 1;
      inFlightByLane.set(lane, now);
      peakByLane.set(lane, Math.max(peakByLane.get(lane) ?? 0, now));
      try {
        await new Promise<void>((resolve) => gates.push(resolve));
        yield textResponse('ok', 10);
      } finally {
        inFlightByLane.set(lane, (inFlightByLane.get(lane) ?? 1) - 1);
      }
    });
    const semaphore = new FairSemaphore(3, { clock, laneLimits: { batch: 1 } });
    const model = new RateLimitedLlm({
      delegate,
      name: 'lanes',
      semaphore,
      estimatedTokens: 10,
      maxWaitMs: 10_000,
      laneOf: () => classOf.getStore(),
      clock,
    });
    const waits: number[] = [];
    const order: string[] = [];
    const call = (lane: string, i: number) =>
      classOf.run(lane, async () => {
        const result = await consume(model.generateContentAsync(request(`${lane}_${i}`)));
        order.push(`${lane}_${i}`);
        return result;
      });
    const runs = [call('batch', 1), call('batch', 2), call('batch', 3), call('interactive', 1), call('interactive', 2)];
    await settle(clock);
    // 3 permits: 1 batch (its cap) + both interactive, although they came after two parked batch calls.
    expect(semaphore.laneInUse('batch')).toBe(1);
    expect(semaphore.laneInUse('interactive')).toBe(2);
    expect(model.snapshot()).toMatchObject({ permitsInUse: 3, waiting: 2 });
    while (gates.length > 0 || semaphore.inUse > 0) {
      gates.shift()?.();
      await settle(clock);
      waits.push(semaphore.laneInUse('batch'));
    }
    const results = await Promise.all(runs);
    expect(results.every((r) => r.error === undefined)).toBe(true);
    expect(peakByLane.get('batch')).toBe(1);
    expect(peakByLane.get('interactive')).toBe(2);
    expect(Math.max(...waits)).toBeLessThanOrEqual(1);
    expect(order.slice(0, 2).sort()).toEqual(['batch_1', 'interactive_1']);
    expect([semaphore.inUse, semaphore.laneInUse('batch'), semaphore.waiting]).toEqual([0, 0, 0]);
    model.close();
  });

  it('a throwing laneOf fails that call before anything is held', async () => {
    const model = new RateLimitedLlm({
      delegate: new FakeLlm(async function* () {
        yield textResponse('never', 1);
      }),
      name: 'lanes-throw',
      maxConcurrent: 1,
      laneOf: () => {
        throw new Error('no lane');
      },
    });
    const { error } = await consume(model.generateContentAsync(request('a')));
    expect((error as Error).message).toBe('no lane');
    expect(model.snapshot()).toMatchObject({ permitsInUse: 0, waiting: 0 });
    model.close();
  });

  it('rejects a laneOf that is not a function, naming it', () => {
    const delegate = new FakeLlm(async function* () {});
    expect(() => new RateLimitedLlm({ delegate, name: 'x', maxConcurrent: 1, laneOf: 'batch' as never })).toThrow(/laneOf/);
  });
});
