// Every number of the mock's configuration has a bound: beyond it the admin API answers 400
// naming the field and the CLI fails naming the flag, before anything is sampled or timed.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSettings } from '../../cli/mock-provider.ts';
import { MAX_LATENCY_MS, MAX_OUTPUT_TOKENS, MAX_PER_TOKEN_MS, MAX_TIMER_MS, type MockProvider, mockConfigSchema, startMockProvider } from '../../mock-provider/index.ts';
import { nestedAtMost } from '../../mock-provider/http.ts';
import { createRandom, sample } from '../../mock-provider/random.ts';
import { generate, instant } from './helpers.ts';

let provider: MockProvider;
beforeAll(async () => {
  provider = await startMockProvider(instant, { port: 0 });
});
afterAll(async () => {
  await provider.close();
});

async function putConfig(patch: unknown): Promise<{ status: number; message: string }> {
  const response = await fetch(`${provider.url}/admin/config`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(patch),
  });
  const body = (await response.json()) as { error?: { message: string } };
  return { status: response.status, message: body.error?.message ?? '' };
}

const overTimer = MAX_TIMER_MS + 1;

/** A patch past one bound, the field the error must name, and the flag that sets it. */
const OUT_OF_BOUNDS: { name: string; patch: object; field: RegExp; flag?: [string, string] }[] = [
  { name: 'outputTokens fixed:1e12', patch: { outputTokens: { kind: 'fixed', value: 1e12 } }, field: /outputTokens\.value: /, flag: ['--output-tokens', 'fixed:1e12'] },
  { name: 'outputTokens normal mean', patch: { outputTokens: { kind: 'normal', mean: MAX_OUTPUT_TOKENS + 1, stddev: 1 } }, field: /outputTokens\.mean: / },
  { name: 'outputTokens lognormal p99', patch: { outputTokens: { kind: 'lognormal', p50: 100, p99: 1e9 } }, field: /outputTokens\.p99: / },
  { name: 'outputTokens uniform max', patch: { outputTokens: { kind: 'uniform', min: 0, max: 1e9 } }, field: /outputTokens\.max: / },
  { name: 'time to first token', patch: { timeToFirstTokenMs: { kind: 'fixed', value: MAX_LATENCY_MS + 1 } }, field: /timeToFirstTokenMs\.value: /, flag: ['--ttft', `fixed:${MAX_LATENCY_MS + 1}`] },
  { name: 'time to first token, normal stddev', patch: { timeToFirstTokenMs: { kind: 'normal', mean: 10, stddev: 1e10 } }, field: /timeToFirstTokenMs\.stddev: / },
  { name: 'per-token ms', patch: { perOutputTokenMs: { kind: 'fixed', value: MAX_PER_TOKEN_MS + 1 } }, field: /perOutputTokenMs\.value: /, flag: ['--per-token-ms', `fixed:${MAX_PER_TOKEN_MS + 1}`] },
  { name: 'stall ms above 2^31-1', patch: { faults: { stallMs: 3_000_000_000 } }, field: /faults\.stallMs: /, flag: ['--fault-stall-ms', '3000000000'] },
  { name: 'stall ms just above the timer limit', patch: { faults: { stallMs: overTimer } }, field: /faults\.stallMs: / },
  {
    name: 'fault probabilities summing to 1.8',
    patch: { faults: { http500Probability: 0.6, http503Probability: 0.6, stallProbability: 0.6 } },
    field: /faults: .*probabilities .*sum.*1\.8/,
    flag: ['--fault-http-500', '0.9'],
  },
  { name: 'stream chunk tokens', patch: { streamChunkTokens: MAX_OUTPUT_TOKENS + 1 }, field: /streamChunkTokens: /, flag: ['--stream-chunk-tokens', String(MAX_OUTPUT_TOKENS + 1)] },
  { name: 'stream error after chunks', patch: { faults: { streamErrorAfterChunks: 1e9 } }, field: /faults\.streamErrorAfterChunks: / },
  { name: 'requests per minute', patch: { requestsPerMinute: 1e15 }, field: /requestsPerMinute: /, flag: ['--requests-per-minute', '1000000000000000'] },
  { name: 'tokens per minute', patch: { tokensPerMinute: 1e16 }, field: /tokensPerMinute: / },
  { name: 'requests per day', patch: { requestsPerDay: 1e16 }, field: /requestsPerDay: / },
  { name: 'max concurrent', patch: { maxConcurrent: 1e9 }, field: /maxConcurrent: / },
  { name: 'max body bytes', patch: { maxBodyBytes: 1e12 }, field: /maxBodyBytes: /, flag: ['--max-body-bytes', '1000000000000'] },
  { name: 'seed', patch: { seed: 2 ** 40 }, field: /seed: /, flag: ['--seed', String(2 ** 40)] },
  { name: 'timeline step time', patch: { timeline: [{ at: 1e12, set: {} }] }, field: /timeline\.0\.at: / },
];

describe('configuration bounds', () => {
  for (const c of OUT_OF_BOUNDS) {
    it(`admin API: ${c.name} → 400 naming the field`, async () => {
      const { status, message } = await putConfig(c.patch);
      expect(status).toBe(400);
      expect(message).toMatch(c.field);
    });
    if (c.flag) {
      const [flag, value] = c.flag;
      it(`CLI: ${flag} ${value} → an error naming the flag`, () => {
        // The probability sum needs two flags past 1 together.
        const extra = flag === '--fault-http-500' ? ['--fault-http-503', '0.9'] : [];
        expect(() => resolveSettings([flag, value, ...extra], {})).toThrow(new RegExp(`${flag}\\b`));
      });
    }
  }

  it('the mock still answers after the rejected patches, with its config unchanged', async () => {
    const config = (await (await fetch(`${provider.url}/admin/config`)).json()) as { outputTokens: unknown; faults: { stallMs: number } };
    expect(config.outputTokens).toEqual(instant.outputTokens);
    expect(config.faults.stallMs).toBe(600_000);
    expect((await generate(provider.url, 'still serving')).status).toBe(200);
  });

  it('values at the bounds are accepted', async () => {
    const { status } = await putConfig({
      outputTokens: { kind: 'fixed', value: 20 },
      faults: { stallMs: MAX_TIMER_MS, http500Probability: 0.5, http503Probability: 0.5 },
    });
    expect(status).toBe(200);
    await putConfig({ faults: { stallMs: 600_000, http500Probability: 0, http503Probability: 0 } });
  });

  it('samples of any valid distribution stay within the field bound (tails of normal and lognormal included)', () => {
    const bounded = fc.record({
      max: fc.constantFrom(MAX_OUTPUT_TOKENS, MAX_LATENCY_MS, MAX_PER_TOKEN_MS),
      a: fc.double({ min: 0.001, max: 1, noNaN: true }),
      b: fc.double({ min: 0.001, max: 1, noNaN: true }),
      kind: fc.constantFrom('fixed', 'uniform', 'normal', 'lognormal'),
      seed: fc.integer({ min: 0, max: 2 ** 31 }),
    });
    fc.assert(
      fc.property(bounded, ({ max, a, b, kind, seed }) => {
        const lo = Math.min(a, b) * max;
        const hi = Math.max(a, b) * max;
        const distribution =
          kind === 'fixed'
            ? { kind, value: hi }
            : kind === 'uniform'
              ? { kind, min: lo, max: hi }
              : kind === 'normal'
                ? { kind, mean: hi, stddev: hi }
                : { kind, p50: lo, p99: hi };
        const field = max === MAX_OUTPUT_TOKENS ? 'outputTokens' : max === MAX_LATENCY_MS ? 'timeToFirstTokenMs' : 'perOutputTokenMs';
        const parsed = mockConfigSchema.parse({ [field]: distribution })[field];
        const random = createRandom(seed);
        for (let i = 0; i < 50; i++) {
          const value = sample(parsed, random, max);
          expect(value).toBeGreaterThanOrEqual(0);
          expect(value).toBeLessThanOrEqual(max);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('nesting bound of tool schemas', () => {
  /** Object/array nesting depth, recursively: a scalar is 0, {} or [] is 1. */
  function depth(value: unknown): number {
    if (typeof value !== 'object' || value === null) return 0;
    return 1 + Math.max(0, ...Object.values(value).map(depth));
  }

  it('nestedAtMost(value, max) holds exactly when the value nests at most max levels', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, max) => {
        expect(nestedAtMost(value, max)).toBe(depth(value) <= max);
      }),
      { numRuns: 500 },
    );
  });
});
