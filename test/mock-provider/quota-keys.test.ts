// The mock's per-key quota state is bounded (issue 23, row 7): 30,000 distinct API keys keep
// at most MAX_QUOTA_KEYS states, keys whose usage is back to zero are forgotten, and
// forgetting an idle key is exact: every answer is the one a book that never forgets gives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type MockConfig, parseConfig } from '../../mock-provider/config.ts';
import { startMockProvider } from '../../mock-provider/index.ts';
import { MAX_QUOTA_KEYS, QuotaBook, type QuotaLease, type QuotaRejection } from '../../mock-provider/quota.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { FakeClock, generate, instant } from './helpers.ts';

describe('per-key quota state', () => {
  it('row 7: 30,000 distinct keys keep at most MAX_QUOTA_KEYS states, and idle ones are forgotten', () => {
    let now = 0;
    const book = new QuotaBook({ now: () => now });
    const config = parseConfig({ requestsPerMinute: 10, tokensPerMinute: 10_000, requestsPerDay: null });
    for (let i = 0; i < 30_000; i++) {
      const lease = book.admit(`key-${i}`, 'gemini-2.5-flash', 10, config);
      expect(lease.ok).toBe(true);
      (lease as QuotaLease).finish(5);
      expect(book.keyCount).toBeLessThanOrEqual(MAX_QUOTA_KEYS);
    }
    expect(book.forgotten.capacity).toBe(30_000 - MAX_QUOTA_KEYS);
    // Two windows later every key's usage is zero: the next new key finds them all forgotten.
    now += 2 * config.quotaWindowMs;
    expect(book.admit('late', 'gemini-2.5-flash', 10, config).ok).toBe(true);
    expect(book.keyCount).toBe(1);
    expect(book.forgotten.idle).toBe(MAX_QUOTA_KEYS);
    // The per-window record still reports the peak key of every window.
    expect(book.windows(config).map((w) => w.requests)).toEqual([1, 1]);
  });

  it('a key with a request in flight is never forgotten', () => {
    let now = 0;
    const book = new QuotaBook({ now: () => now });
    const config = parseConfig({ maxConcurrent: 1 });
    expect(book.admit('busy', 'gemini-2.5-flash', 1, config).ok).toBe(true); // never finished
    now += 10 * config.quotaWindowMs;
    for (let i = 0; i < MAX_QUOTA_KEYS + 5; i++) (book.admit(`k${i}`, 'gemini-2.5-flash', 1, config) as QuotaLease).finish(0);
    expect(book.admit('busy', 'gemini-2.5-flash', 1, config)).toMatchObject({ ok: false, quota: 'concurrent' });
  });

  it('property: forgetting idle keys changes no answer (same as one book per key, which never forgets)', () => {
    const step = fc.record({
      key: fc.integer({ min: 0, max: 5 }),
      gap: fc.integer({ min: 0, max: 40_000 }),
      input: fc.integer({ min: 1, max: 400 }),
      output: fc.integer({ min: 0, max: 400 }),
    });
    fc.assert(
      fc.property(
        fc.constantFrom<MockConfig['quotaWindow']>('fixed', 'sliding', 'bucket'),
        fc.constantFrom<MockConfig['countedTokens']>('input', 'input+output'),
        fc.option(fc.integer({ min: 3, max: 50 })),
        fc.array(step, { maxLength: 200 }),
        (quotaWindow, countedTokens, requestsPerDay, steps) => {
          let now = 0;
          const clock = { now: () => now };
          const config = parseConfig({ quotaWindow, countedTokens, requestsPerDay, requestsPerMinute: 4, tokensPerMinute: 1_000 });
          const shared = new QuotaBook(clock);
          const alone = new Map<number, QuotaBook>();
          const answer = (a: QuotaLease | QuotaRejection) => (a.ok ? 'ok' : `${a.quota} ${a.retryMs}`);
          for (const s of steps) {
            now += s.gap;
            const own = alone.get(s.key) ?? new QuotaBook(clock);
            alone.set(s.key, own);
            const a = shared.admit(`key-${s.key}`, 'gemini-2.5-flash', s.input, config);
            const b = own.admit(`key-${s.key}`, 'gemini-2.5-flash', s.input, config);
            expect(answer(a)).toBe(answer(b));
            if (a.ok) a.finish(s.output);
            if (b.ok) b.finish(s.output);
            // The same status, up to floating-point noise in a refilling bucket's reset time.
            const rounded = (status: ReturnType<QuotaBook['status']>) =>
              JSON.parse(JSON.stringify(status, (k, v) => (k === 'resetMs' && typeof v === 'number' ? Math.round(v * 1000) / 1000 : v)));
            expect(rounded(shared.status(`key-${s.key}`, 'gemini-2.5-flash', config))).toEqual(rounded(own.status(`key-${s.key}`, 'gemini-2.5-flash', config)));
          }
        },
      ),
    );
  });

  it('mock_provider_quota_keys counts the keys kept: distinct keys, then none once their usage is back to zero', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const mock = await startMockProvider({ ...instant, requestsPerMinute: 100 } as Parameters<typeof startMockProvider>[0], { port: 0, clock });
    try {
      for (const key of ['a', 'b', 'c', 'a']) expect((await generate(mock.url, 'hi', { key })).status).toBe(200);
      const keys = async () => sumOfMetric(await (await fetch(`${mock.url}/metrics`)).text(), 'mock_provider_quota_keys');
      expect(await keys()).toBe(3);
      clock.advance(2 * 60_000);
      expect((await generate(mock.url, 'hi', { key: 'd' })).status).toBe(200);
      expect(await keys()).toBe(1);
    } finally {
      await mock.close();
    }
  });
});
