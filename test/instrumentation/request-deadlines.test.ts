// A request's deadlines, computed once at the door, and its calls' cutoffs: properties of the
// pure functions every deadline is derived with.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AUTO_DEADLINE_CRITICAL_PATHS,
  DEFAULT_REQUEST_DEADLINE_MS,
  DOOR_CRITICAL_PATH_MARGIN,
  DOOR_SEEN_PATH_MARGIN,
  MAX_REQUEST_DEADLINE_MS,
} from '../../instrumentation/defaults.ts';
import {
  callCutoff,
  chainDeadlineMs,
  chainWithMarginMs,
  permitReclaimAt,
  requestDeadlineMsFor,
  requestDeadlines,
} from '../../instrumentation/admission/request-deadlines.ts';

const timing = fc.record({
  arrivedAt: fc.integer({ min: 0, max: 1_000_000 }),
  waitedMs: fc.integer({ min: 0, max: 5_000 }),
  depth: fc.integer({ min: 0, max: 40 }),
  callMs: fc.integer({ min: 1, max: 60_000 }),
  seenPathMs: fc.integer({ min: 0, max: 600_000 }),
  configuredMs: fc.option(fc.integer({ min: 1_000, max: MAX_REQUEST_DEADLINE_MS }), { nil: undefined }),
  shedFirst: fc.boolean(),
});

describe('request deadlines', () => {
  it('an unset deadline is the default, or twice a longer critical path, at most the maximum; a configured one is kept', () => {
    expect(requestDeadlineMsFor(10_000)).toBe(DEFAULT_REQUEST_DEADLINE_MS);
    expect(requestDeadlineMsFor(48_000)).toBe(96_000);
    expect(requestDeadlineMsFor(400_000)).toBe(MAX_REQUEST_DEADLINE_MS);
    expect(requestDeadlineMsFor(48_000, 30_000)).toBe(30_000);
  });

  it('a chain deadline in whole seconds, as a flag takes it', () => {
    expect(chainDeadlineMs(10.3, 1000)).toBe(21_000);
    expect(chainDeadlineMs(10.3)).toBe(21);
    expect(chainDeadlineMs(400, 1000)).toBe(MAX_REQUEST_DEADLINE_MS);
  });

  it('property: at the door, the deadline leaves the chain its margin (up to the maximum), the door comes before it, and a lane shed first never waits', () => {
    fc.assert(
      fc.property(timing, (t) => {
        const now = t.arrivedAt + t.waitedMs;
        const d = requestDeadlines({ ...t, now });
        const chainMs = t.depth * t.callMs;
        expect(d.arrivedAt).toBe(t.arrivedAt);
        expect(d.request).toBe(t.arrivedAt + d.requestMs);
        expect(d.chainMs).toBe(chainWithMarginMs(t.depth, t.callMs));
        expect(d.requestMs).toBeLessThanOrEqual(Math.max(MAX_REQUEST_DEADLINE_MS, t.configuredMs ?? 0));
        if (t.configuredMs === undefined) {
          expect(d.requestMs).toBeGreaterThanOrEqual(Math.min(MAX_REQUEST_DEADLINE_MS, Math.max(DEFAULT_REQUEST_DEADLINE_MS, AUTO_DEADLINE_CRITICAL_PATHS * chainMs)));
        } else if (t.configuredMs >= DOOR_CRITICAL_PATH_MARGIN * chainMs) {
          expect(d.requestMs).toBe(t.configuredMs);
        } else {
          expect(d.requestMs).toBe(chainDeadlineMs(chainMs));
        }
        if (t.shedFirst) {
          expect(d.door).toBe(now);
        } else {
          expect(d.door).toBeLessThanOrEqual(d.request - d.chainMs);
          expect(d.door).toBeLessThanOrEqual(d.request - DOOR_SEEN_PATH_MARGIN * t.seenPathMs);
        }
      }),
    );
  });

  it("property: a call waits until maxWait, or its request's deadline when later; its permit is reclaimed maxCallMs after admission", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.option(fc.integer({ min: 0, max: 5_000_000 }), { nil: undefined }),
        (start, maxWaitMs, requestDeadline) => {
          const cutoff = callCutoff(start, maxWaitMs, requestDeadline);
          expect(cutoff.deadline).toBe(Math.max(start + maxWaitMs, requestDeadline ?? 0));
          expect(cutoff.isRequest).toBe(requestDeadline !== undefined && requestDeadline > start + maxWaitMs);
        },
      ),
    );
    expect(permitReclaimAt(1_000, 300_000)).toBe(301_000);
  });
});
