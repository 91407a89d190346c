// Seeded randomness: a small fast PRNG (sfc32) and sampling of the configured distributions.
import type { Distribution } from './config.ts';

/** Returns floats in [0, 1). */
export type Random = () => number;

/** sfc32: 128-bit state, passes PractRand to 2^42; plenty for a mock and much faster than crypto. */
export function createRandom(seed: number): Random {
  let a = 0x9e3779b9;
  let b = 0x243f6a88;
  let c = 0xb7e15162;
  let d = seed >>> 0;
  const next = (): number => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next(); // mix the seed into the whole state
  return next;
}

/** Standard normal variate (Box-Muller). */
function standardNormal(random: Random): number {
  const u = 1 - random(); // (0, 1], so the log is finite
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** z such that P(Z <= z) = 0.99 for a standard normal. */
const Z99 = 2.3263478740408408;

/** Samples a distribution, clamped to [0, max]. Lognormal: median p50, 99th percentile p99. */
export function sample(distribution: Distribution, random: Random, max = Number.POSITIVE_INFINITY): number {
  return Math.min(max, unclamped(distribution, random));
}

function unclamped(distribution: Distribution, random: Random): number {
  switch (distribution.kind) {
    case 'fixed':
      return distribution.value;
    case 'uniform':
      return distribution.min + (distribution.max - distribution.min) * random();
    case 'normal':
      return Math.max(0, distribution.mean + distribution.stddev * standardNormal(random));
    case 'lognormal': {
      const sigma = (Math.log(distribution.p99) - Math.log(distribution.p50)) / Z99;
      return distribution.p50 * Math.exp(sigma * standardNormal(random));
    }
  }
}
