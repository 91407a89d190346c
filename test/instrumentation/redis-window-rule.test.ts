// The window rule has two copies: the TS module (instrumentation/budget/window-rule.ts) the budgets use, and the
// Lua of the rolling-window script. This differential property runs the real script on a real
// redis-server over random histories (admissions counted at once and holds with use schedules,
// settles that release holds and correct slots, carried tokens, blocks, limit changes, time
// passing) and checks every reply against a model that applies the TS rule to the same
// history: what is granted, the wait of the first refused, the sums, and the window and holds
// sent back. The model keeps the hash's slots and holds from the ops it sent and the slot
// each reply ran in (Redis' clock); every decision is the TS rule's.
import fc from 'fast-check';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_WINDOW_SLOTS } from '../../instrumentation/defaults.ts';
import { amountOf } from '../../instrumentation/budget/redis-window-client.ts';
import { maxBudgetTtlMs, ROLLING_WINDOW_SCRIPT } from '../../instrumentation/budget/redis-window-script.ts';
import { excessNow, fitsNow, leavesInMs, slotsAfter, WindowOutlook } from '../../instrumentation/budget/window-rule.ts';
import { type RedisServer, startRedisServer } from '../support/redis-server.ts';

// Slots of 3 ms (a part's ms are rounded to slots, as in a real window): the window moves while
// the history runs, and a sleep of 350 ms empties it.
const SLOT_MS = 3;
const WINDOW_MS = REDIS_WINDOW_SLOTS * SLOT_MS;
const LIVE = REDIS_WINDOW_SLOTS + 1;
const CAPACITY = 1_000;
const MAX_TTL_MS = maxBudgetTtlMs(WINDOW_MS);

type Amount = { readonly hold: false; readonly tokens: number } | { readonly hold: true; readonly parts: readonly { afterMs: number; tokens: number }[] };

type Step =
  | { readonly op: 'take'; readonly amounts: readonly Amount[] }
  | { readonly op: 'settle'; readonly quads: readonly { slotPick: number; delta: number; holdPick: number; release: number }[] }
  | { readonly op: 'block'; readonly ms: number }
  | { readonly op: 'peek' };

interface Run {
  readonly step: Step;
  readonly limit: number;
  readonly carry: number;
  readonly sleepMs: number;
}

/** The hash as the TS side knows it: tokens per counted slot and per hold due slot, and the block. */
class Model {
  readonly counted = new Map<number, number>();
  readonly holds = new Map<number, number>();
  blocked = 0;
  /** Slots admissions were counted or held in, for settles to aim at. */
  readonly slots: number[] = [];
  readonly holdSlots: number[] = [];

  advance(cur: number): void {
    for (const s of [...this.counted.keys()]) if (s <= cur - LIVE) this.counted.delete(s);
    for (const d of [...this.holds.keys()]) if (d <= cur - LIVE) this.holds.delete(d);
  }

  count(slot: number, tokens: number): void {
    this.counted.set(slot, (this.counted.get(slot) ?? 0) + tokens);
  }

  sum(): number {
    return [...this.counted.values()].reduce((a, b) => a + b, 0);
  }

  held(): number {
    return [...this.holds.values()].reduce((a, b) => a + b, 0);
  }

  /** [when each live slot leaves (ms on Redis' clock), tokens], ascending. */
  leaving(): [number, number][] {
    return [...this.counted.entries()]
      .filter(([, tokens]) => tokens > 1e-6)
      .sort(([a], [b]) => a - b)
      .map(([s, tokens]) => [(s + LIVE) * SLOT_MS, tokens]);
  }

  holdList(): { dueAt: number; tokens: number }[] {
    return [...this.holds.entries()]
      .filter(([, tokens]) => tokens > 1e-6)
      .sort(([a], [b]) => a - b)
      .map(([d, tokens]) => ({ dueAt: d * SLOT_MS, tokens }));
  }

  window() {
    return { counted: this.sum(), held: this.held(), outlook: () => new WindowOutlook(this.leaving(), this.holdList()) };
  }
}

const amountArb: fc.Arbitrary<Amount> = fc.oneof(
  fc.record({ hold: fc.constant(false as const), tokens: fc.integer({ min: 0, max: 1_200 }) }),
  fc.record({
    hold: fc.constant(true as const),
    parts: fc.array(fc.record({ afterMs: fc.integer({ min: 0, max: 450 }), tokens: fc.integer({ min: 1, max: 450 }) }), { minLength: 1, maxLength: 3 }),
  }),
);

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('take' as const), amounts: fc.array(amountArb, { minLength: 1, maxLength: 4 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      quads: fc.array(
        fc.record({ slotPick: fc.nat(), delta: fc.integer({ min: -300, max: 300 }), holdPick: fc.nat(), release: fc.integer({ min: 0, max: 500 }) }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('block' as const), ms: fc.integer({ min: 1, max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('peek' as const) }) },
);

const runArb: fc.Arbitrary<Run> = fc.record({
  step: stepArb,
  limit: fc.constantFrom(CAPACITY, CAPACITY, 700, 400),
  carry: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 300 }) }),
  sleepMs: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 30 }) }, { weight: 1, arbitrary: fc.integer({ min: 100, max: 350 }) }),
});

const pick = (list: readonly number[], n: number): number => (list.length === 0 || n % 4 === 0 ? 0 : list[n % list.length]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let redis: RedisServer;
let client: ReturnType<typeof createClient>;
let keyCounter = 0;

beforeAll(async () => {
  redis = await startRedisServer();
  client = createClient({ url: redis.url });
  await client.connect();
});

afterAll(async () => {
  client?.destroy();
  await redis?.close();
});

/** One run of the script; its reply as numbers. */
async function runScript(key: string, run: Run, args: readonly string[]): Promise<number[]> {
  const argv = [String(run.limit), String(WINDOW_MS), run.step.op, String(run.carry), '2', String(CAPACITY), ...args];
  const reply = (await client.eval(ROLLING_WINDOW_SCRIPT, { keys: [key], arguments: argv })) as unknown[];
  return reply.map((value) => Number(String(value)));
}

function argsOf(step: Step, model: Model): string[] {
  switch (step.op) {
    case 'take':
      return step.amounts.map((a) => (a.hold ? amountOf({ tokens: 0, atUse: true, parts: a.parts }) : amountOf({ tokens: a.tokens, atUse: false, parts: [] })));
    case 'settle':
      return step.quads.flatMap((q) => [String(pick(model.slots, q.slotPick)), String(q.delta), String(pick(model.holdSlots, q.holdPick)), String(q.release)]);
    case 'block':
      return [String(step.ms)];
    case 'peek':
      return [];
  }
}

/** Apply a run to the model with the TS rule; what the reply must say. */
function expected(model: Model, run: Run, args: readonly string[], cur: number, now: number, fresh: boolean): { granted: number; waitMs: number } {
  model.advance(cur);
  // A key the script found missing expired: by then everything in it had left the window.
  if (fresh) expect([model.counted.size, model.holds.size, now >= model.blocked]).toEqual([0, 0, true]);
  if (run.carry > 0) model.count(cur, run.carry);
  const { step, limit } = run;
  let granted = 0;
  let waitMs = 0;
  if (step.op === 'take') {
    if (now < model.blocked) return { granted, waitMs: Math.max(0, Math.ceil(Math.min(model.blocked - now, MAX_TTL_MS))) };
    for (const amount of step.amounts) {
      const parts = amount.hold ? amount.parts.map((p) => ({ afterMs: slotsAfter(p.afterMs, SLOT_MS) * SLOT_MS, tokens: p.tokens })) : undefined;
      const tokens = amount.hold ? amount.parts.reduce((sum, p) => sum + p.tokens, 0) : amount.tokens;
      if (!fitsNow(model.window(), cur * SLOT_MS, tokens, parts, limit)) {
        const excess = excessNow(model.sum(), model.held(), tokens, limit);
        const wait = leavesInMs(model.leaving(), now, excess) ?? WINDOW_MS + SLOT_MS;
        waitMs = Math.max(0, Math.ceil(Math.min(wait, MAX_TTL_MS)));
        break;
      }
      if (parts) {
        for (const part of parts) {
          const due = cur + part.afterMs / SLOT_MS;
          model.holds.set(due, (model.holds.get(due) ?? 0) + part.tokens);
          model.holdSlots.push(due);
        }
      } else {
        model.count(cur, tokens);
        model.slots.push(cur);
      }
      granted++;
    }
  } else if (step.op === 'settle') {
    for (let i = 0; i + 3 < args.length; i += 4) {
      const [s, delta, h, release] = args.slice(i, i + 4).map(Number);
      const held = model.holds.get(h);
      if (release > 0 && h > cur - LIVE && held !== undefined) model.holds.set(h, held - Math.min(release, held));
      const counted = s > cur - LIVE ? model.counted.get(s) : undefined;
      if (counted !== undefined) model.counted.set(s, counted + Math.max(delta, -counted));
      else if (delta > 0) model.count(cur, delta);
    }
  } else if (step.op === 'block') {
    model.blocked = Math.max(model.blocked, now + Math.min(step.ms, MAX_TTL_MS));
  }
  return { granted, waitMs };
}

describe('the rolling-window script against the TS window rule', () => {
  it('property: over random histories the script grants, waits and reports as the TS rule decides', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(runArb, { minLength: 5, maxLength: 25 }), async (runs) => {
        const key = `test:rule:${++keyCounter}`;
        const model = new Model();
        for (const run of runs) {
          if (run.sleepMs > 0) await sleep(run.sleepMs);
          const args = argsOf(run.step, model);
          const reply = await runScript(key, run, args);
          const [granted, sum, waitMs, cur, fresh, psum, holdPairs, intoSlotMs] = reply;
          const now = cur * SLOT_MS + intoSlotMs;
          const what = `${run.step.op} ${args.join(' ')} at slot ${cur}`;
          const want = expected(model, run, args, cur, now, fresh === 1);
          expect({ granted, waitMs }, what).toEqual(want);
          expect(sum, what).toBeCloseTo(model.sum(), 6);
          expect(psum, what).toBeCloseTo(model.held(), 6);
          // The window and holds sent back (flags ask for them): what the client's outlook reads.
          const pairs = reply.slice(8);
          const holds = model.holdList().map((h) => [Math.max(0, Math.ceil(h.dueAt - now)), h.tokens]);
          const leaving = model.leaving().map(([at, tokens]) => [Math.max(0, Math.ceil(at - now)), tokens]);
          expect(holdPairs, what).toBe(holds.length);
          expect(pairs, what).toEqual([...holds, ...leaving].flat());
        }
      }),
      { numRuns: 40 },
    );
  });
});
