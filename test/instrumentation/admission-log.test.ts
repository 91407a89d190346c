// AdmissionLog: what one replica admitted over the last window, read back for a span.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionLog } from '../../instrumentation/limits/admission-log.ts';

const WINDOW = 60_000;
const SLOT = WINDOW / 100;

describe('AdmissionLog', () => {
  it('property: a span never counts more than was admitted in it, and counts all of it from the first whole slot to the one before now', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 5_000 }), tokens: fc.integer({ min: 0, max: 2_000 }) }), { maxLength: 60 }),
        fc.integer({ min: 0, max: WINDOW }),
        (admissions, back) => {
          const log = new AdmissionLog(WINDOW);
          let now = 1_000_000;
          const all: { at: number; tokens: number }[] = [];
          for (const a of admissions) {
            now += a.gapMs;
            log.add(now, a.tokens);
            all.push({ at: now, tokens: a.tokens });
          }
          const from = now - back;
          const counted = log.since(now, from);
          const inSpan = all.filter((a) => a.at >= from && a.at <= now).reduce((sum, a) => sum + a.tokens, 0);
          expect(counted).toBeLessThanOrEqual(inSpan);
          const firstWhole = Math.ceil(from / SLOT) * SLOT;
          const beforeNowSlot = Math.floor(now / SLOT) * SLOT;
          const wholly = all.filter((a) => a.at >= firstWhole && a.at < beforeNowSlot).reduce((sum, a) => sum + a.tokens, 0);
          expect(counted).toBe(wholly);
        },
      ),
    );
  });
});
