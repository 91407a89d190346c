// The way to a shared budget, on fake time: a request goes through only when its first calls
// can take permits at once, one request at a time, in order; a deadline ends the wait; and a
// property: whatever the interleaving, a request that passes finds the permits its first calls need.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeadlineExceeded } from '../../instrumentation/errors.ts';
import { PermitDoor } from '../../instrumentation/admission/permit-door.ts';
import { FairSemaphore, type Permit } from '../../instrumentation/semaphore.ts';
import { flushMicrotasks, ManualClock } from '../../instrumentation/clock.ts';

describe('PermitDoor', () => {
  it('lets a request through once its first calls can start, one at a time, in order', async () => {
    const clock = new ManualClock();
    const semaphore = new FairSemaphore(5, { clock });
    const door = new PermitDoor(semaphore, clock);
    const held = await Promise.all([0, 1, 2].map(() => semaphore.acquire()));
    const passed: string[] = [];
    const first = door.enter(4, {}).then((pass) => {
      passed.push('first');
      return pass;
    });
    const second = door.enter(1, {}).then((pass) => {
      passed.push('second');
      return pass;
    });
    await flushMicrotasks();
    expect(passed).toEqual([]); // 2 permits free: the first needs 4, the second waits behind it
    held[0].release();
    held[1].release();
    await flushMicrotasks();
    expect(passed).toEqual(['first']);
    const pass = await first;
    const calls: Permit[] = [];
    for (let i = 0; i < 4; i++) {
      calls.push(await semaphore.acquire());
      pass.callStarted();
      await flushMicrotasks();
      expect(passed).toEqual(['first']); // the door is held until all 4 started; then no permit is free
    }
    calls[0].release();
    await flushMicrotasks();
    expect(passed).toEqual(['first', 'second']);
    (await second).leave();
    for (const permit of [...calls.slice(1), held[2]]) permit.release();
  });

  it('asks for at most the permit limit, and a request that leaves (shed, ended) opens the door', async () => {
    const clock = new ManualClock();
    const semaphore = new FairSemaphore(2, { clock });
    const door = new PermitDoor(semaphore, clock);
    const pass = await door.enter(8, {}); // a fan-out wider than the limit goes when every permit is free
    let next = false;
    void door.enter(1, {}).then(() => {
      next = true;
    });
    await flushMicrotasks();
    expect(next).toBe(false);
    pass.leave();
    pass.leave(); // once only
    await flushMicrotasks();
    expect(next).toBe(true);
  });

  it('a deadline ends the wait with DeadlineExceeded and lets the next one try', async () => {
    const clock = new ManualClock();
    const semaphore = new FairSemaphore(4, { clock });
    const door = new PermitDoor(semaphore, clock);
    const permits = await Promise.all([0, 1, 2].map(() => semaphore.acquire()));
    const late = door.enter(4, { deadline: 100 }).catch((error: unknown) => error);
    const small = door.enter(1, { deadline: 1_000 });
    let smallPassed = false;
    void small.then(() => {
      smallPassed = true;
    });
    await clock.advance(100);
    expect(await late).toBeInstanceOf(DeadlineExceeded);
    await flushMicrotasks();
    expect(smallPassed).toBe(true);
    expect(door.waiting).toBe(0);
    for (const permit of permits) permit.release();
  });

  it('reserveThrough: a reservation that fails behind the door leaves it, so the next request goes; one that succeeds holds it', async () => {
    const clock = new ManualClock();
    const semaphore = new FairSemaphore(2, { clock });
    const door = new PermitDoor(semaphore, clock);
    const refused = new Error('budget refused');
    const failed = door.reserveThrough(1, {}, () => Promise.reject(refused)).catch((error: unknown) => error);
    expect(await failed).toBe(refused);
    const through = await door.reserveThrough(1, {}, () => Promise.resolve('ticket'));
    expect(through.value).toBe('ticket');
    let next = false;
    void door.enter(1, {}).then(() => {
      next = true;
    });
    await flushMicrotasks();
    expect(next).toBe(false); // the first request through still starts
    through.pass.leave();
    await flushMicrotasks();
    expect(next).toBe(true);
  });

  it('property: a request that passes finds free the permits its first calls need (up to the limit), and every request passes or gives up', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.record({ calls: fc.integer({ min: 1, max: 8 }), callMs: fc.integer({ min: 1, max: 50 }), gapMs: fc.integer({ min: 0, max: 30 }) }), { minLength: 1, maxLength: 20 }),
        async (limit, requests) => {
          const clock = new ManualClock();
          const semaphore = new FairSemaphore(limit, { clock });
          const door = new PermitDoor(semaphore, clock);
          let started = 0;
          const runs = requests.map(async ({ calls, callMs, gapMs }, i) => {
            const pass = await door.enter(calls, { deadline: 10_000 + i });
            expect(semaphore.free).toBeGreaterThanOrEqual(Math.min(calls, limit));
            await Promise.all(
              Array.from({ length: calls }, async () => {
                const permit = await semaphore.acquire();
                pass.callStarted();
                await new Promise<void>((resolve) => clock.setTimeout(resolve, callMs));
                permit.release();
              }),
            );
            await new Promise<void>((resolve) => clock.setTimeout(resolve, gapMs));
            started++;
          });
          for (let t = 0; t < 5_000 && started < requests.length; t += 5) await clock.advance(5);
          await Promise.all(runs);
          expect(started).toBe(requests.length);
          expect(semaphore.inUse).toBe(0);
          expect(door.waiting).toBe(0);
        },
      ),
      { numRuns: 30 },
    );
  });
});
