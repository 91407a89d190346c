// The quota window's length (quotaWindowMs) and the per-window record the benchmarks read.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../mock-provider/config.ts';
import { QuotaBook } from '../../mock-provider/quota.ts';

describe('quotaWindowMs', () => {
  it('is bounded and defaults to a minute', () => {
    expect(parseConfig({}).quotaWindowMs).toBe(60_000);
    expect(() => parseConfig({ quotaWindowMs: 999 })).toThrow(/quotaWindowMs/);
    expect(() => parseConfig({ quotaWindowMs: 3_600_001 })).toThrow(/quotaWindowMs/);
  });

  it('counts the token quota per window of that length and records each window', () => {
    let now = 0;
    const book = new QuotaBook({ now: () => now });
    const config = parseConfig({ quotaWindowMs: 5_000, tokensPerMinute: 1_000, countedTokens: 'input+output' });
    const lease = book.admit('k', 'm', 600, config);
    expect(lease.ok).toBe(true);
    if (lease.ok) lease.finish(300);
    const refused = book.admit('k', 'm', 200, config);
    expect(refused).toMatchObject({ ok: false, quota: 'tokens_per_minute', retryMs: 5_000 });
    now = 5_000; // the next 5 s window
    expect(book.admit('k', 'm', 900, config).ok).toBe(true);
    expect(book.windows(config)).toEqual([
      { start: 0, tokens: 900, requests: 1, rateLimited: 1, model: 'm', tokensLimit: 1_000, requestsLimit: 1_000 },
      { start: 5_000, tokens: 900, requests: 1, rateLimited: 0, model: 'm', tokensLimit: 1_000, requestsLimit: 1_000 },
    ]);
  });
});
