// A cold limiter's learning turns, on fake time: one request learns while the others wait; a
// turn that taught a cost releases every waiter, one that ended without teaching one (or ran
// out) hands the turn to the next; a waiter's deadline and abort end its wait; and a property:
// whatever the arrivals, turn lengths and learners' ends, at most one turn is open at a time
// and every request learns, is told the cost is learned, or gives up by its deadline.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { flushMicrotasks, ManualClock } from '../../instrumentation/clock.ts';
import { ColdStart, type ColdStartTurn } from '../../instrumentation/admission/cold-start.ts';
import { DeadlineExceeded } from '../../instrumentation/errors.ts';

/** A cold start whose limiter learns a cost when the test says so. */
function coldStart(clock: ManualClock): { cold: ColdStart; learn: () => void } {
  let known = false;
  return { cold: new ColdStart(clock, () => known), learn: () => (known = true) };
}

/** The turn's end of a request granted a learning turn (fails the test otherwise). */
function learnerEnd(turn: ColdStartTurn): () => void {
  if (turn.kind !== 'learn') throw new Error(`expected a learning turn, got ${turn.kind}`);
  return turn.done;
}

describe('ColdStart', () => {
  it('lets one request learn at once; the others wait until its turn taught a cost, then all go', async () => {
    const clock = new ManualClock();
    const { cold, learn } = coldStart(clock);
    const done = learnerEnd(await cold.enter({ turnMs: 5_000 }));
    expect(cold.learning).toBe(true);
    expect(cold.turnLeftMs()).toBe(5_000);
    const told: string[] = [];
    const waiters = [1, 2].map((i) => cold.enter({ turnMs: 5_000 }).then((turn) => told.push(`${i}:${turn.kind}`)));
    await clock.advance(1_000);
    expect(told).toEqual([]);
    expect(cold.waiting).toBe(2);
    expect(cold.turnLeftMs()).toBe(4_000);
    learn();
    done();
    await Promise.all(waiters);
    expect(told).toEqual(['1:learned', '2:learned']);
    expect(cold.learning).toBe(false);
    expect(cold.waiting).toBe(0);
    expect(cold.turnLeftMs()).toBe(0);
  });

  it('a turn that ends without teaching a cost goes to the next waiter, in order; ending it twice does nothing', async () => {
    const clock = new ManualClock();
    const { cold } = coldStart(clock);
    const first = learnerEnd(await cold.enter({ turnMs: 5_000 }));
    const order: number[] = [];
    const second = cold.enter({ turnMs: 3_000 }).then((turn) => {
      order.push(2);
      return turn;
    });
    const third = cold.enter({ turnMs: 3_000 }).then((turn) => {
      order.push(3);
      return turn;
    });
    first();
    const secondEnd = learnerEnd(await second);
    first(); // once only: the second's turn stays open
    await flushMicrotasks();
    expect(order).toEqual([2]);
    expect(cold.learning).toBe(true);
    expect(cold.turnLeftMs()).toBe(3_000); // the new learner's own turn
    secondEnd();
    learnerEnd(await third);
    expect(order).toEqual([2, 3]);
  });

  it('a turn whose learner finished a call in it is renewed; one that finished none in a turn runs out', async () => {
    const clock = new ManualClock();
    let finished = 0;
    let known = false;
    const cold = new ColdStart(clock, () => known, () => finished);
    learnerEnd(await cold.enter({ turnMs: 2_000 }));
    let next: ColdStartTurn | undefined;
    void cold.enter({ turnMs: 10_000 }).then((turn) => {
      next = turn;
    });
    // A call ends (and teaches a cost) within the first turn: the turn goes on for another 2 s.
    await clock.advance(1_500);
    finished = 1;
    known = true;
    await clock.advance(1_000);
    expect(next).toBeUndefined();
    expect(cold.learning).toBe(true);
    expect(cold.turnLeftMs()).toBe(1_500);
    // No call ends in the renewed turn: it runs out, and the waiter is funded with the cost learned.
    await clock.advance(1_500);
    expect(next?.kind).toBe('learned');
    expect(cold.learning).toBe(false);
  });

  it('a turn that runs out hands over to the next waiter, even if the learner never ends it', async () => {
    const clock = new ManualClock();
    const { cold } = coldStart(clock);
    learnerEnd(await cold.enter({ turnMs: 2_000 }));
    let next: ColdStartTurn | undefined;
    void cold.enter({ turnMs: 2_000 }).then((turn) => {
      next = turn;
    });
    await clock.advance(1_999);
    expect(next).toBeUndefined();
    await clock.advance(1);
    expect(next?.kind).toBe('learn');
    expect(cold.turnLeftMs()).toBe(2_000);
  });

  it('a waiter past its deadline gives up with DeadlineExceeded, and may be told when the turn ends', async () => {
    const clock = new ManualClock();
    const { cold } = coldStart(clock);
    learnerEnd(await cold.enter({ turnMs: 10_000 }));
    const late = cold.enter({ deadline: 4_000, turnMs: 10_000 }).catch((error: unknown) => error);
    await clock.advance(4_000);
    expect(await late).toBeInstanceOf(DeadlineExceeded);
    expect(cold.waiting).toBe(0);
    expect(cold.turnLeftMs()).toBe(6_000);
  });

  it('an aborted waiter leaves with the abort reason, and the next waiter keeps its place', async () => {
    const clock = new ManualClock();
    const { cold } = coldStart(clock);
    const done = learnerEnd(await cold.enter({ turnMs: 10_000 }));
    const controller = new AbortController();
    const gone = cold.enter({ signal: controller.signal, turnMs: 10_000 }).catch((error: unknown) => error);
    const stays = cold.enter({ turnMs: 10_000 });
    const reason = new Error('client left');
    controller.abort(reason);
    expect(await gone).toBe(reason);
    expect(cold.waiting).toBe(1);
    done();
    expect((await stays).kind).toBe('learn');
  });

  it('once a cost is known, a request is told so at once and nobody learns', async () => {
    const clock = new ManualClock();
    const { cold, learn } = coldStart(clock);
    learn();
    expect((await cold.enter({ turnMs: 1_000 })).kind).toBe('learned');
    expect(cold.learning).toBe(false);
  });

  it('tryLearn opens a turn only when nobody learns or waits', async () => {
    const clock = new ManualClock();
    const { cold } = coldStart(clock);
    const end = cold.tryLearn(3_000);
    expect(end).toBeTypeOf('function');
    expect(cold.learning).toBe(true);
    expect(cold.tryLearn(3_000)).toBeUndefined(); // somebody learns
    const waiter = cold.enter({ turnMs: 3_000 });
    end?.();
    const waiterEnd = learnerEnd(await waiter);
    expect(cold.tryLearn(3_000)).toBeUndefined();
    waiterEnd();
    void cold.enter({ turnMs: 3_000 }); // learns at once
    await flushMicrotasks();
    void cold.enter({ turnMs: 3_000 }); // waits
    expect(cold.tryLearn(3_000)).toBeUndefined();
    expect(cold.waiting).toBe(1);
  });

  it('property: at most one turn at a time, and every request learns, is told the cost, or gives up by its deadline', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            arriveMs: fc.integer({ min: 0, max: 2_000 }),
            turnMs: fc.integer({ min: 1, max: 500 }),
            waitMs: fc.option(fc.integer({ min: 0, max: 1_000 }), { nil: undefined }),
            learnsForMs: fc.integer({ min: 0, max: 800 }),
            teaches: fc.boolean(),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (requests) => {
          const clock = new ManualClock();
          const { cold, learn } = coldStart(clock);
          /** Each learning turn as [from, to): granted, until its learner ended it or it ran out. */
          const turns: [number, number][] = [];
          const ends: string[] = [];
          const runs = requests.map(async (r, i) => {
            await new Promise<void>((resolve) => clock.setTimeout(resolve, r.arriveMs));
            const deadline = r.waitMs === undefined ? undefined : clock.now() + r.waitMs;
            let turn: ColdStartTurn;
            try {
              turn = await cold.enter({ deadline, turnMs: r.turnMs });
            } catch (error) {
              expect(error).toBeInstanceOf(DeadlineExceeded);
              expect(clock.now()).toBe(deadline);
              ends[i] = 'gave up';
              return;
            }
            if (turn.kind === 'learned') {
              ends[i] = 'learned';
              return;
            }
            const from = clock.now();
            turns.push([from, from + Math.min(r.learnsForMs, r.turnMs)]);
            // The learner's request ends (a turn that already ran out stays over).
            await new Promise<void>((resolve) => clock.setTimeout(resolve, r.learnsForMs));
            if (r.teaches) learn();
            turn.done();
            ends[i] = 'learnt';
          });
          for (let t = 0; t < 20_000 && ends.filter(Boolean).length < requests.length; t += 50) await clock.advance(50);
          await Promise.all(runs);
          const sorted = turns.sort((a, b) => a[0] - b[0]);
          for (let k = 1; k < sorted.length; k++) expect(sorted[k][0]).toBeGreaterThanOrEqual(sorted[k - 1][1]);
          expect(ends.filter(Boolean)).toHaveLength(requests.length);
          expect(cold.waiting).toBe(0);
          expect(cold.learning).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });
});
