// Quota semantics through HTTP on a fake clock: the mock is the oracle other tests trust.
import { afterEach, describe, expect, it } from 'vitest';
import { type MockConfigPatch, type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { FakeClock, type GoogleErrorBody, generate, instant, json } from './helpers.ts';
import { samplesOf } from '../../loadtest/measure/prometheus-text.ts';

let provider: MockProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

async function start(config: MockConfigPatch, clock: FakeClock): Promise<MockProvider> {
  provider = await startMockProvider({ ...instant, ...config }, { port: 0, clock });
  return provider;
}

function retryDelaySeconds(body: GoogleErrorBody): number {
  const info = body.error.details.find((d) => d['@type'].endsWith('RetryInfo'));
  return Number(info?.retryDelay?.replace(/s$/, ''));
}

describe('requests per minute', () => {
  it('fixed window: exactly N pass, the N+1st gets 429 with the time to the next minute', async () => {
    const clock = new FakeClock(14_162.093073); // 14.162093073 s into a minute (small numbers keep ns precision)
    const { url } = await start({ requestsPerMinute: 5 }, clock);
    for (let i = 0; i < 5; i++) expect((await generate(url, `call ${i}`)).status).toBe(200);
    const refused = await generate(url, 'one too many');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeNull(); // like real Gemini
    const body = await json(refused);
    expect(body.error.status).toBe('RESOURCE_EXHAUSTED');
    expect(body.error.details[0]['@type']).toBe('type.googleapis.com/google.rpc.QuotaFailure');
    expect(body.error.details[0].violations[0].quotaId).toBe('GenerateRequestsPerMinutePerProjectPerModel');
    expect(body.error.details.at(-1)?.retryDelay).toBe('45.837906927s');
    // Another API key is another project with its own quota.
    expect((await generate(url, 'other key', { key: 'second-project' })).status).toBe(200);
    clock.advance(45_837.906927);
    expect((await generate(url, 'next minute')).status).toBe(200);
  });

  it('sliding window: frees one period after each admitted request, not at the minute boundary', async () => {
    const clock = new FakeClock(1_800_000_000_000 + 50_000); // 10 s before a minute boundary
    const { url } = await start({ requestsPerMinute: 2, quotaWindow: 'sliding' }, clock);
    expect((await generate(url, 'a')).status).toBe(200);
    clock.advance(5_000);
    expect((await generate(url, 'b')).status).toBe(200);
    clock.advance(6_000); // past the minute boundary: a fixed window would have reset
    const refused = await generate(url, 'c');
    expect(refused.status).toBe(429);
    expect(retryDelaySeconds(await json(refused))).toBeCloseTo(49, 6); // 60 s after 'a'
    clock.advance(49_000);
    expect((await generate(url, 'd')).status).toBe(200);
  });

  it('fixed window admits the same burst the sliding window refuses', async () => {
    const clock = new FakeClock(1_800_000_000_000 + 50_000);
    const { url } = await start({ requestsPerMinute: 2, quotaWindow: 'fixed' }, clock);
    expect((await generate(url, 'a')).status).toBe(200);
    clock.advance(5_000);
    expect((await generate(url, 'b')).status).toBe(200);
    clock.advance(6_000);
    expect((await generate(url, 'c')).status).toBe(200);
  });

  it('bucket: refills continuously at limit/60 per second', async () => {
    const clock = new FakeClock();
    const { url } = await start({ requestsPerMinute: 60, quotaWindow: 'bucket' }, clock);
    for (let i = 0; i < 60; i++) expect((await generate(url, `b${i}`)).status).toBe(200);
    const refused = await generate(url, 'empty');
    expect(refused.status).toBe(429);
    expect(retryDelaySeconds(await json(refused))).toBeCloseTo(1, 6);
    clock.advance(1_000);
    expect((await generate(url, 'refilled one')).status).toBe(200);
    expect((await generate(url, 'but only one')).status).toBe(429);
  });
});

describe('tokens per minute', () => {
  // 400 characters = 100 input tokens by the ceil(chars / 4) rule; 20 output tokens each.
  const text = 'x'.repeat(400);

  it('counts input tokens only by default', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const { url } = await start({ tokensPerMinute: 300 }, clock);
    for (let i = 0; i < 3; i++) expect((await generate(url, text)).status).toBe(200);
    const refused = await generate(url, text);
    expect(refused.status).toBe(429);
    const body = await json(refused);
    expect(body.error.details[0].violations[0].quotaId).toBe('GenerateContentPaidTierInputTokensPerModelPerMinute');
    expect(body.error.details[0].violations[0].quotaValue).toBe('300');
    expect(retryDelaySeconds(body)).toBe(60);
  });

  it('counts output tokens too when configured', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const { url } = await start({ tokensPerMinute: 300, countedTokens: 'input+output' }, clock);
    // 120 tokens per call: two calls use 240; the third needs 100 more and does not fit.
    expect((await generate(url, text)).status).toBe(200);
    expect((await generate(url, text)).status).toBe(200);
    expect((await generate(url, text)).status).toBe(429);
  });

  it('a request larger than the whole quota never fits and says so', async () => {
    const { url } = await start({ tokensPerMinute: 50 }, new FakeClock());
    const refused = await generate(url, text);
    expect(refused.status).toBe(429);
    const body = await json(refused);
    expect(body.error.message).toContain('This request alone exceeds the limit');
    expect(body.error.details.some((d) => d['@type'].endsWith('RetryInfo'))).toBe(false);
  });
});

describe('requests per day, concurrency, Retry-After option', () => {
  it('requests per day is a fixed UTC day and names the daily quota', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 23, 0, 0));
    const { url } = await start({ requestsPerDay: 2 }, clock);
    expect((await generate(url, 'a')).status).toBe(200);
    clock.advance(61_000);
    expect((await generate(url, 'b')).status).toBe(200);
    clock.advance(61_000);
    const refused = await generate(url, 'c');
    expect(refused.status).toBe(429);
    const body = await json(refused);
    expect(body.error.details[0].violations[0].quotaId).toBe('GenerateRequestsPerDayPerProjectPerModel');
    expect(retryDelaySeconds(body)).toBeCloseTo(3600 - 122, 6);
  });

  it('max concurrent refuses while a stream is open and admits after it ends', async () => {
    const { url } = await start({ maxConcurrent: 1, timeToFirstTokenMs: { kind: 'fixed', value: 300 } }, new FakeClock());
    const first = generate(url, 'slow');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const refused = await generate(url, 'second');
    expect(refused.status).toBe(429);
    expect((await json(refused)).error.details[0].violations[0].quotaId).toBe('ConcurrentGenerateRequestsPerProjectPerModel');
    expect((await first).status).toBe(200);
    expect((await generate(url, 'third')).status).toBe(200);
  });

  it('adds Retry-After to Gemini 429s only when asked', async () => {
    const clock = new FakeClock(1_800_000_000_000 + 30_500);
    const { url } = await start({ requestsPerMinute: 1, geminiRetryAfterHeader: true }, clock);
    await generate(url, 'a');
    const refused = await generate(url, 'b');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
  });
});

describe('timeline and admin', () => {
  it('a timeline step cuts the quota at its time', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const { url } = await start({ requestsPerMinute: 10, timeline: [{ at: 30, set: { requestsPerMinute: 2 } }] }, clock);
    for (let i = 0; i < 3; i++) expect((await generate(url, `before ${i}`)).status).toBe(200);
    clock.advance(29_999);
    expect((await generate(url, 'still before')).status).toBe(200);
    clock.advance(1);
    const refused = await generate(url, 'after the cut');
    expect(refused.status).toBe(429);
    expect((await json(refused)).error.details[0].violations[0].quotaValue).toBe('2');
    const config = await json<{ requestsPerMinute: number }>(await fetch(`${url}/admin/config`));
    expect(config.requestsPerMinute).toBe(2);
  });

  it('PUT /admin/config changes the quota live; POST /admin/reset forgets usage', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const { url } = await start({ requestsPerMinute: 1 }, clock);
    expect((await generate(url, 'a')).status).toBe(200);
    expect((await generate(url, 'b')).status).toBe(429);
    const put = await fetch(`${url}/admin/config`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requestsPerMinute: 2 }),
    });
    expect(put.status).toBe(200);
    expect((await json<{ requestsPerMinute: number }>(put)).requestsPerMinute).toBe(2);
    expect((await generate(url, 'c')).status).toBe(200);
    expect((await generate(url, 'd')).status).toBe(429);
    expect((await fetch(`${url}/admin/reset`, { method: 'POST' })).status).toBe(200);
    expect((await generate(url, 'e')).status).toBe(200);
  });

  it('metrics report quota used against limit and 429s by reason', async () => {
    const clock = new FakeClock(1_800_000_000_000);
    const { url } = await start({ requestsPerMinute: 3, tokensPerMinute: 10_000 }, clock);
    for (let i = 0; i < 4; i++) await generate(url, 'x'.repeat(40));
    const text = await (await fetch(`${url}/metrics`)).text();
    const values = (name: string, labels: Record<string, string>) => samplesOf(text, name, labels).map((s) => s.value);
    expect(values('mock_provider_quota_used', { quota: 'requests_per_minute' })).toEqual([3]);
    expect(values('mock_provider_quota_limit', { quota: 'requests_per_minute' })).toEqual([3]);
    expect(values('mock_provider_quota_used', { quota: 'tokens_per_minute' })).toEqual([30]);
    expect(values('mock_provider_rate_limited_total', { api: 'gemini', reason: 'requests_per_minute' })).toEqual([1]);
    expect(values('mock_provider_requests_total', { api: 'gemini', model: 'gemini-2.5-flash', status: '200' })).toEqual([3]);
    expect(values('mock_provider_requests_total', { api: 'gemini', model: 'gemini-2.5-flash', status: '429' })).toEqual([1]);
    expect(values('mock_provider_tokens_total', { type: 'input' })).toEqual([30]);
    expect(values('mock_provider_tokens_total', { type: 'output' })).toEqual([60]);
    expect(values('mock_provider_quota_limit', { quota: 'requests_per_day' })).toEqual([]);
  });
});
