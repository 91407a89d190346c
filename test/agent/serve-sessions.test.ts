// serve's bounded session store and state bounds, on a fake clock (fast-check): the count
// never exceeds the bound, the session evicted for room is the one idle longest, a session
// with a run in flight is never evicted, an idle one goes once the idle limit passes, and
// every eviction is counted. jsonDepth agrees with a recursive count on any JSON.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { jsonDepth } from '../../agent/serve/session-state.ts';
import { BoundedSessionService, SessionLimitError } from '../../agent/serve/sessions.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

const APP = 'app';
const IDLE_MS = 1_000;

type Op = { kind: 'create' } | { kind: 'get' | 'delete' | 'hold' | 'release'; pick: number } | { kind: 'wait'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'create' as const }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constantFrom('get' as const, 'delete' as const, 'hold' as const, 'release' as const), pick: fc.nat() }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 700 }) }), weight: 2 },
);

describe('BoundedSessionService', () => {
  it('property: bounded, least recently used idle session evicted first, held ones never, idle ones after the limit', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 60 }), async (maxSessions, ops) => {
        let now = 0;
        const registry = new Registry();
        const store = new BoundedSessionService({ maxSessions, idleMs: IDLE_MS, now: () => now }, registry);
        // The model: last use per kept session (least recently used first) and holds per session.
        const lastUse = new Map<string, number>();
        const holds = new Map<string, (() => void)[]>();
        const touch = (id: string) => {
          lastUse.delete(id);
          lastUse.set(id, now);
        };
        let evictions = 0;
        const expireIdle = () => {
          for (const [id, at] of [...lastUse]) {
            if (at > now - IDLE_MS || (holds.get(id)?.length ?? 0) > 0) continue;
            lastUse.delete(id);
            evictions++;
          }
        };
        try {
          for (const o of ops) {
            const ids = [...lastUse.keys()];
            const id = ids.length > 0 && 'pick' in o ? ids[o.pick % ids.length] : undefined;
            if (o.kind === 'create') {
              expireIdle();
              const room = lastUse.size < maxSessions || [...lastUse.keys()].some((k) => (holds.get(k)?.length ?? 0) === 0);
              if (!room) {
                await expect(store.createSession({ appName: APP, userId: 'u' })).rejects.toBeInstanceOf(SessionLimitError);
                continue;
              }
              if (lastUse.size >= maxSessions) {
                const victim = [...lastUse.keys()].find((k) => (holds.get(k)?.length ?? 0) === 0) as string;
                lastUse.delete(victim);
                evictions++;
              }
              const session = await store.createSession({ appName: APP, userId: 'u' });
              touch(session.id);
            } else if (o.kind === 'wait') {
              now += o.ms;
            } else if (id !== undefined && o.kind === 'get') {
              expect(await store.getSession({ appName: APP, userId: 'u', sessionId: id })).toBeDefined();
              touch(id);
            } else if (id !== undefined && o.kind === 'delete') {
              await store.deleteSession({ appName: APP, userId: 'u', sessionId: id });
              lastUse.delete(id);
            } else if (id !== undefined && o.kind === 'hold') {
              holds.set(id, [...(holds.get(id) ?? []), store.hold(APP, 'u', id)]);
            } else if (id !== undefined && o.kind === 'release') {
              const release = holds.get(id)?.pop();
              if (release) {
                release();
                touch(id);
              }
            }
            expect(store.size).toBeLessThanOrEqual(maxSessions);
            const listed = (await store.listSessions({ appName: APP, userId: 'u' })).sessions.map((s) => s.id);
            expect(new Set(listed)).toEqual(new Set(lastUse.keys()));
          }
          await store.evictIdle();
          expireIdle();
          expect(store.size).toBe(lastUse.size);
          const text = await registry.metrics();
          expect(sumOfMetric(text, 'agent_sessions_evicted_total')).toBe(evictions);
          expect(sumOfMetric(text, 'agent_sessions_stored')).toBe(lastUse.size);
        } finally {
          store.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('jsonDepth', () => {
  const depth = (v: unknown): number => (v === null || typeof v !== 'object' ? 0 : 1 + Math.max(0, ...Object.values(v).map(depth)));
  it('property: equals the recursive depth of any JSON value, and stops counting past the limit', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, limit) => {
        const exact = depth(value);
        expect(jsonDepth(value, 64)).toBe(exact);
        const capped = jsonDepth(value, limit);
        if (exact <= limit) expect(capped).toBe(exact);
        else expect(capped).toBe(limit + 1);
      }),
    );
  });

  it('measures 100,000 levels without recursion', () => {
    let value: unknown = {};
    for (let i = 0; i < 100_000; i++) value = { a: value };
    expect(jsonDepth(value, 32)).toBe(33);
  });
});
