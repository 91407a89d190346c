// The run's progress line: k6's per-second lines parsed, the scenario's phase at a time, the
// line's figures, and the plain (not a terminal) mode printing a line per interval.
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseK6Progress, phaseAt, plannedSeconds, progressLine, RunProgress } from '../../loadtest/drive/progress.ts';
import type { ScenarioFile } from '../../loadtest/scenario/types.ts';
import { arrivalLabel } from '../../loadtest/scenario/arrivals.ts';

const scenario: ScenarioFile = {
  name: 'main',
  arrivals: [
    { kind: 'burst', at: 0, users: 10 },
    { kind: 'constant', start: 24, perMinute: 40, duration: 300 },
  ],
};

describe('progress', () => {
  it("parses k6's running lines, with and without minutes", () => {
    expect(parseK6Progress('running (0m18.9s), 01/65 VUs, 11 complete and 0 interrupted iterations')).toEqual({ elapsedSeconds: 18.9, vus: 1, complete: 11, interrupted: 0 });
    expect(parseK6Progress('running (10.9s), 002/092 VUs, 15 complete and 1 interrupted iterations')).toEqual({ elapsedSeconds: 10.9, vus: 2, complete: 15, interrupted: 1 });
    expect(parseK6Progress('running (1h02m03.0s), 10/10 VUs, 3 complete and 0 interrupted iterations')?.elapsedSeconds).toBe(3723);
    expect(parseK6Progress('constant_0   [  68% ] 002/092 VUs  10.9s/16s  1.50 iters/s')).toBeUndefined();
  });

  it('property: any elapsed time k6 prints reads back', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 599 }), fc.nat(1000), (minutes, tenths, complete) => {
        const s = (tenths / 10).toFixed(1).padStart(4, '0');
        const p = parseK6Progress(`running (${minutes}m${s}s), 01/10 VUs, ${complete} complete and 0 interrupted iterations`);
        expect(p?.elapsedSeconds).toBeCloseTo(minutes * 60 + tenths / 10, 6);
        expect(p?.complete).toBe(complete);
      }),
    );
  });

  it('names the phase the scenario is in', () => {
    expect(plannedSeconds(scenario)).toBe(324);
    expect(phaseAt(scenario, 0.5)).toBe('burst of 10');
    expect(phaseAt(scenario, 10)).toBe('after burst of 10');
    expect(phaseAt(scenario, 100)).toBe('steady 40/min');
    expect(phaseAt(scenario, 330)).toBe('draining');
  });

  it('every arrival kind has a label', () => {
    expect(arrivalLabel({ kind: 'burst', at: 0, users: 3 })).toBe('burst of 3');
    expect(arrivalLabel({ kind: 'constant', start: 0, duration: 60, perMinute: 12 })).toBe('steady 12/min');
    expect(arrivalLabel({ kind: 'ramping', start: 0, startPerMinute: 0, stages: [{ duration: 10, targetPerMinute: 6 }] })).toBe('ramping');
    expect(arrivalLabel({ kind: 'trace', file: 'trace.jsonl' })).toBe('trace');
  });

  it('the line: phase, elapsed of planned, requests, acquire p95, 429s, timeouts', () => {
    const k6 = { elapsedSeconds: 72.4, vus: 5, complete: 41, interrupted: 0 };
    expect(progressLine(scenario, k6, { acquireP95Seconds: 0.8, rateLimited: 0, timeouts: 3 })).toBe(
      '[run] steady 40/min · 1m12s of 5m24s · 41 requests · acquire p95 800 ms · 429s 0 · timeouts 3',
    );
    expect(progressLine(scenario, undefined, undefined)).toBe('[run] starting · 0s of 5m24s · 0 requests');
  });

  it('not a terminal: a plain line per interval, and the last figures on stop', async () => {
    const out = new PassThrough() as unknown as NodeJS.WriteStream;
    let text = '';
    (out as unknown as PassThrough).on('data', (d) => {
      text += d;
    });
    const progress = new RunProgress({ scenario, out, tty: false, plainEveryMs: 20 });
    await progress.start();
    progress.update({ elapsedSeconds: 2, vus: 10, complete: 0, interrupted: 0 });
    while (!text.includes('\n')) await new Promise((r) => setTimeout(r, 10));
    progress.log('[k6] a warning');
    progress.update({ elapsedSeconds: 30, vus: 2, complete: 12, interrupted: 0 });
    await progress.stop();
    const lines = text.trim().split('\n');
    expect(lines[0]).toBe('[run] after burst of 10 · 2s of 5m24s · 0 requests');
    expect(lines).toContain('[k6] a warning');
    expect(lines.at(-1)).toBe('[run] steady 40/min · 30s of 5m24s · 12 requests');
    expect(text).not.toContain('\r');
  });

  it('a terminal: one line rewritten in place', async () => {
    const out = new PassThrough() as unknown as NodeJS.WriteStream;
    let text = '';
    (out as unknown as PassThrough).on('data', (d) => {
      text += d;
    });
    const progress = new RunProgress({ scenario, out, tty: true });
    await progress.start();
    progress.update({ elapsedSeconds: 30, vus: 2, complete: 12, interrupted: 0 });
    while (!text.includes('\r')) await new Promise((r) => setTimeout(r, 50));
    await progress.stop();
    expect(text.startsWith('\r\x1b[2K[run] steady 40/min · 30s of 5m24s · 12 requests')).toBe(true);
    expect(text.split('\n').filter(Boolean)).toHaveLength(1); // the final line only
  });
});
