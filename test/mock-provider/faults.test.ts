// Injected faults: probabilities hold within statistical bounds over a seeded run, a seed
// reproduces the run, and each fault looks to a client as it would from a real provider.
import { ApiError, GoogleGenAI } from '@google/genai';
import { afterEach, describe, expect, it } from 'vitest';
import { type MockConfigPatch, type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { generate, instant } from './helpers.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

let providers: MockProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.map((p) => p.close()));
  providers = [];
});

async function start(config: MockConfigPatch): Promise<MockProvider> {
  const provider = await startMockProvider({ ...instant, requestsPerMinute: 100_000, ...config }, { port: 0 });
  providers.push(provider);
  return provider;
}

const probabilities = {
  http500Probability: 0.1,
  http503Probability: 0.05,
  connectionResetProbability: 0.04,
  stallProbability: 0.03,
  stallMs: 5,
};

/** Status per request, 'dropped' when the connection died (reset or stall). */
async function run(url: string, count: number, stream = false): Promise<string[]> {
  const outcomes: string[] = [];
  for (let i = 0; i < count; i++) {
    try {
      const response = await generate(url, `request ${i}`, { stream });
      await response.text();
      outcomes.push(String(response.status));
    } catch {
      outcomes.push('dropped');
    }
  }
  return outcomes;
}

/** |observed - n p| within 4.5 standard deviations of a binomial: fails by chance ~1 in 150,000. */
function expectBinomial(observed: number, n: number, p: number): void {
  const sd = Math.sqrt(n * p * (1 - p));
  expect(Math.abs(observed - n * p)).toBeLessThanOrEqual(4.5 * sd);
}

describe('fault injection', () => {
  it('fault rates match their probabilities, and metrics count each fault', async () => {
    const n = 1000;
    const { url } = await start({ faults: probabilities, seed: 42 });
    const outcomes = await run(url, n);
    const count = (status: string) => outcomes.filter((o) => o === status).length;
    expectBinomial(count('500'), n, probabilities.http500Probability);
    expectBinomial(count('503'), n, probabilities.http503Probability);
    expectBinomial(count('dropped'), n, probabilities.connectionResetProbability + probabilities.stallProbability);
    expect(count('200') + count('500') + count('503') + count('dropped')).toBe(n);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(sumOfMetric(metrics, 'mock_provider_faults_total', { fault: 'http_500' })).toBe(count('500'));
    expect(sumOfMetric(metrics, 'mock_provider_faults_total', { fault: 'http_503' })).toBe(count('503'));
    const resets = sumOfMetric(metrics, 'mock_provider_faults_total', { fault: 'connection_reset' });
    const stalls = sumOfMetric(metrics, 'mock_provider_faults_total', { fault: 'stall' });
    expect(resets + stalls).toBe(count('dropped'));
    expectBinomial(resets, n, probabilities.connectionResetProbability);
    expectBinomial(stalls, n, probabilities.stallProbability);
  });

  it('the same seed replays the same faults; another seed does not', async () => {
    const a = await start({ faults: probabilities, seed: 7 });
    const b = await start({ faults: probabilities, seed: 7 });
    const c = await start({ faults: probabilities, seed: 8 });
    const [ra, rb, rc] = await Promise.all([run(a.url, 150), run(b.url, 150), run(c.url, 150)]);
    expect(ra).toEqual(rb);
    expect(ra).not.toEqual(rc);
  });

  it('random throttling below quota answers 429 at the configured rate, counted as reason="random"', async () => {
    const n = 600;
    const { url } = await start({ throttleProbability: 0.2, seed: 3 });
    const outcomes = await run(url, n);
    const throttled = outcomes.filter((o) => o === '429').length;
    expectBinomial(throttled, n, 0.2);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(sumOfMetric(metrics, 'mock_provider_rate_limited_total', { api: 'gemini', reason: 'random' })).toBe(throttled);
  });

  it('a stream error arrives after N chunks and the genai client throws', async () => {
    const { url } = await start({
      outputTokens: { kind: 'fixed', value: 100 },
      streamChunkTokens: 10,
      faults: { streamErrorProbability: 1, streamErrorAfterChunks: 3 },
    });
    const client = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: url } });
    const stream = await client.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hello' });
    let chunks = 0;
    const error = await (async () => {
      for await (const _chunk of stream) chunks++;
    })().catch((e: unknown) => e);
    expect(chunks).toBe(3);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(500);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(sumOfMetric(metrics, 'mock_provider_faults_total', { fault: 'stream_error' })).toBe(1);
  });

  it('a stalled stream sends its first chunk, then nothing until the stall ends the connection', async () => {
    const { url } = await start({
      outputTokens: { kind: 'fixed', value: 100 },
      streamChunkTokens: 10,
      faults: { stallProbability: 1, stallMs: 300 },
    });
    const started = performance.now();
    const response = await generate(url, 'stall me', { stream: true });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toMatch(/^data: /);
    const rest = await reader.read().catch((e: unknown) => e);
    expect(rest).toBeInstanceOf(Error); // the connection was dropped, not ended cleanly
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('latency distributions pace the response', async () => {
    const { url } = await start({
      timeToFirstTokenMs: { kind: 'fixed', value: 150 },
      perOutputTokenMs: { kind: 'fixed', value: 2 },
      outputTokens: { kind: 'fixed', value: 51 },
    });
    const started = performance.now();
    expect((await generate(url, 'timed')).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(150 + 50 * 2 - 5);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(sumOfMetric(metrics, 'mock_provider_time_to_first_token_seconds_bucket', { le: '0.1', api: 'gemini' })).toBe(0);
    expect(sumOfMetric(metrics, 'mock_provider_time_to_first_token_seconds_bucket', { le: '0.25', api: 'gemini' })).toBe(1);
  });
});
