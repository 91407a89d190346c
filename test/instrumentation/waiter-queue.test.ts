// The wait queue on its own, on fake time: FIFO order, deadlines, aborts, and no timer or
// abort listener left behind once a waiter has left.
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeadlineExceeded } from '../../instrumentation/errors.ts';
import { ManualClock } from '../../instrumentation/testing.ts';
import { WaiterQueue } from '../../instrumentation/waiter-queue.ts';

function queue(clock: ManualClock, onGiveUp?: () => void): WaiterQueue<string, number> {
  return new WaiterQueue<string, number>({ clock, what: 'test resource', onGiveUp });
}

/** Grant the head, if any, with `value`; returns its data. */
function grantHead(q: WaiterQueue<string, number>, value: number): string | undefined {
  const head = q.head();
  head?.grant(value);
  return head?.data;
}

describe('WaiterQueue', () => {
  it('grants in arrival order and walks the waiters in that order', async () => {
    const clock = new ManualClock();
    const q = queue(clock);
    const order: string[] = [];
    const waits = ['a', 'b', 'c'].map((name) => q.wait(name).then((v) => order.push(`${name}${v}`)));
    expect([...q].map((w) => w.data)).toEqual(['a', 'b', 'c']);
    expect(q.size).toBe(3);
    expect(grantHead(q, 1)).toBe('a');
    expect(grantHead(q, 2)).toBe('b');
    expect(grantHead(q, 3)).toBe('c');
    expect(q.head()).toBeUndefined();
    await Promise.all(waits);
    expect(order).toEqual(['a1', 'b2', 'c3']);
  });

  it('a waiter past its deadline rejects with DeadlineExceeded, leaves, and lets the owner re-admit', async () => {
    const clock = new ManualClock();
    let gaveUp = 0;
    const q = queue(clock, () => gaveUp++);
    const late = q.wait('late', { deadline: 100 }).catch((e: unknown) => e);
    const patient = q.wait('patient');
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(99);
    expect(q.size).toBe(2);
    await clock.advance(1);
    const error = await late;
    expect(error).toBeInstanceOf(DeadlineExceeded);
    expect((error as Error).message).toContain('test resource');
    expect(gaveUp).toBe(1);
    expect([...q].map((w) => w.data)).toEqual(['patient']);
    grantHead(q, 7);
    expect(await patient).toBe(7);
  });

  it('a deadline already passed or a signal already aborted rejects at once, queueing nothing', async () => {
    const clock = new ManualClock(1_000);
    const q = queue(clock);
    await expect(q.wait('past', { deadline: 1_000 })).rejects.toBeInstanceOf(DeadlineExceeded);
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(q.wait('aborted', { signal: controller.signal })).rejects.toThrow('gone');
    expect(q.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('an abort rejects with the signal reason and clears the deadline timer and the listener', async () => {
    const clock = new ManualClock();
    let gaveUp = 0;
    const q = queue(clock, () => gaveUp++);
    const controller = new AbortController();
    const waiting = q.wait('w', { deadline: 5_000, signal: controller.signal }).catch((e: unknown) => e);
    expect(clock.pendingTimers).toBe(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    const reason = new Error('caller left');
    controller.abort(reason);
    expect(await waiting).toBe(reason);
    expect(gaveUp).toBe(1);
    expect(q.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('a granted waiter leaves no timer or listener, and grant or fail after leaving does nothing', async () => {
    const clock = new ManualClock();
    let gaveUp = 0;
    const q = queue(clock, () => gaveUp++);
    const controller = new AbortController();
    const waiting = q.wait('w', { deadline: 5_000, signal: controller.signal });
    const head = q.head();
    head?.grant(1);
    expect(head?.queued).toBe(false);
    head?.grant(2);
    head?.fail(new Error('too late'));
    expect(await waiting).toBe(1);
    expect(gaveUp).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort();
    await clock.advance(10_000);
    expect(gaveUp).toBe(0);
  });

  it('failAll rejects every waiter in order and clears their timers', async () => {
    const clock = new ManualClock();
    const q = queue(clock);
    const rejected: string[] = [];
    const waits = ['a', 'b'].map((name) => q.wait(name, { deadline: 1_000 }).catch(() => rejected.push(name)));
    q.failAll(new Error('closed'));
    await Promise.all(waits);
    expect(rejected).toEqual(['a', 'b']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('property: grants follow arrival order among the waiters still queued, and no timer outlives its waiter', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('wait' as const), deadlineMs: fc.option(fc.integer({ min: 1, max: 500 }), { nil: undefined }), abortable: fc.boolean() }),
      fc.record({ kind: fc.constant('grant' as const) }),
      fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 300 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const clock = new ManualClock();
        const q = queue(clock);
        const controllers = new Map<string, AbortController>();
        const arrived: string[] = [];
        const granted: string[] = [];
        const left = new Set<string>();
        const settled: Promise<unknown>[] = [];
        for (const [i, step] of ops.entries()) {
          if (step.kind === 'wait') {
            const name = `w${i}`;
            const controller = step.abortable ? new AbortController() : undefined;
            if (controller) controllers.set(name, controller);
            const deadline = step.deadlineMs === undefined ? undefined : clock.now() + step.deadlineMs;
            arrived.push(name);
            settled.push(q.wait(name, { deadline, signal: controller?.signal }).then(() => {}, () => left.add(name)));
          } else if (step.kind === 'grant') {
            const earliest = arrived.find((n) => !granted.includes(n) && !left.has(n));
            const name = grantHead(q, i);
            expect(name).toBe(earliest);
            if (name !== undefined) granted.push(name);
          } else if (step.kind === 'abort') {
            const names = [...controllers.keys()];
            if (names.length > 0) controllers.get(names[step.pick % names.length])?.abort();
          } else {
            await clock.advance(step.ms);
          }
          await clock.advance(0);
          const queued = [...q].map((w) => w.data);
          // One timer per queued waiter with a deadline, none for the ones that left.
          const withDeadline = ops.flatMap((o, j) => (o.kind === 'wait' && o.deadlineMs !== undefined ? [`w${j}`] : []));
          expect(clock.pendingTimers).toBe(queued.filter((n) => withDeadline.includes(n)).length);
        }
        q.failAll(new Error('end'));
        await Promise.all(settled);
        expect(clock.pendingTimers).toBe(0);
        for (const controller of controllers.values()) expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      }),
      { numRuns: 200 },
    );
  });
});
