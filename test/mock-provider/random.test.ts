// Seeded sampling: distributions have the requested shape (checked on large seeded samples).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRandom, sample } from '../../mock-provider/random.ts';

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))];
}

describe('distributions', () => {
  const random = createRandom(123);
  const draw = (n: number, f: () => number) => Array.from({ length: n }, f);

  it('lognormal from p50 and p99 has that median and 99th percentile', () => {
    const values = draw(40_000, () => sample({ kind: 'lognormal', p50: 600, p99: 2500 }, random));
    expect(quantile(values, 0.5)).toBeGreaterThan(580);
    expect(quantile(values, 0.5)).toBeLessThan(620);
    expect(quantile(values, 0.99)).toBeGreaterThan(2250);
    expect(quantile(values, 0.99)).toBeLessThan(2750);
  });

  it('normal has its mean and standard deviation; uniform stays in range', () => {
    const normal = draw(40_000, () => sample({ kind: 'normal', mean: 800, stddev: 150 }, random));
    const mean = normal.reduce((a, b) => a + b, 0) / normal.length;
    const sd = Math.sqrt(normal.reduce((a, b) => a + (b - mean) ** 2, 0) / normal.length);
    expect(mean).toBeGreaterThan(795);
    expect(mean).toBeLessThan(805);
    expect(sd).toBeGreaterThan(145);
    expect(sd).toBeLessThan(155);
    const uniform = draw(10_000, () => sample({ kind: 'uniform', min: 100, max: 300 }, random));
    expect(Math.min(...uniform)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...uniform)).toBeLessThan(300);
  });

  it('the same seed gives the same stream; values are in [0, 1)', () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const a = createRandom(seed);
        const b = createRandom(seed);
        for (let i = 0; i < 20; i++) {
          const x = a();
          expect(x).toBe(b());
          expect(x).toBeGreaterThanOrEqual(0);
          expect(x).toBeLessThan(1);
        }
      }),
    );
  });
});
