// Quota scope: Gemini counts quotas per project (API key) and per model, and so does the mock by
// default; per-model limits; one quota per key shared by every model when asked (quotaScope key).
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../mock-provider/config.ts';
import { type MockConfigPatch, type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { resolveSettings } from '../../cli/mock-provider.ts';
import { FakeClock, generate, instant } from './helpers.ts';

let provider: MockProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

async function start(config: MockConfigPatch): Promise<string> {
  provider = await startMockProvider({ ...instant, ...config }, { port: 0, clock: new FakeClock(1_800_000_000_000) });
  return provider.url;
}

const FLASH = 'gemini-2.5-flash';
const PRO = 'gemini-2.5-pro';

async function statuses(url: string, model: string, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await generate(url, `call ${i}`, { model })).status);
  return out;
}

describe('quota scope', () => {
  it('counts each model of a key apart by default, as Gemini does', async () => {
    const url = await start({ requestsPerMinute: 2 });
    expect(await statuses(url, FLASH, 3)).toEqual([200, 200, 429]);
    // Another model of the same key has its own quota.
    expect(await statuses(url, PRO, 3)).toEqual([200, 200, 429]);
  });

  it('takes a limit per model; a model not named takes *', async () => {
    const url = await start({ requestsPerMinute: { [PRO]: 1, '*': 3 } });
    expect(await statuses(url, PRO, 2)).toEqual([200, 429]);
    expect(await statuses(url, FLASH, 4)).toEqual([200, 200, 200, 429]);
    const windows = (await (await fetch(`${url}/admin/quota/windows`)).json()) as { quotaScope: string; windows: { model: string; requestsLimit: number }[] };
    expect(windows.quotaScope).toBe('model');
    expect(windows.windows[0]).toMatchObject({ requestsLimit: expect.any(Number) });
  });

  it('shares one quota among the models of a key with quotaScope key', async () => {
    const url = await start({ requestsPerMinute: 3, quotaScope: 'key' });
    expect(await statuses(url, FLASH, 2)).toEqual([200, 200]);
    expect(await statuses(url, PRO, 2)).toEqual([200, 429]);
  });

  it('validates per-model limits, naming the field and the model', () => {
    expect(parseConfig({ tokensPerMinute: { [PRO]: 500_000 } }).tokensPerMinute).toEqual({ [PRO]: 500_000 });
    expect(() => parseConfig({ tokensPerMinute: { [PRO]: 0 } })).toThrow(/tokensPerMinute\.gemini-2\.5-pro: Too small/);
    expect(() => parseConfig({ tokensPerMinute: { [PRO]: 2e12 } })).toThrow(/tokensPerMinute\.gemini-2\.5-pro: Too big/);
    expect(() => parseConfig({ requestsPerMinute: {} })).toThrow(/requestsPerMinute/);
    expect(() => parseConfig({ quotaScope: 'key', tokensPerMinute: { [PRO]: 5 } })).toThrow(/tokensPerMinute: per-model values need quotaScope "model"/);
    expect(() => parseConfig({ quotaScope: 'project' })).toThrow(/quotaScope/);
  });
});

describe('mock-provider per-model flags', () => {
  it('reads N, MODEL=N,MODEL=N and N,MODEL=N', () => {
    expect(resolveSettings(['--tokens-per-minute', '1000000']).config.tokensPerMinute).toBe(1_000_000);
    expect(resolveSettings(['--tokens-per-minute', `${FLASH}=1000000,${PRO}=500000`]).config.tokensPerMinute).toEqual({ [FLASH]: 1_000_000, [PRO]: 500_000 });
    expect(resolveSettings(['--requests-per-minute', `60,${PRO}=10`]).config.requestsPerMinute).toEqual({ '*': 60, [PRO]: 10 });
    expect(resolveSettings(['--quota-scope', 'key']).config.quotaScope).toBe('key');
  });

  it('names the flag and the model in an error', () => {
    expect(() => resolveSettings(['--tokens-per-minute', `${PRO}=-5`])).toThrow(/--tokens-per-minute: tokensPerMinute: gemini-2\.5-pro: Too small/);
    expect(() => resolveSettings(['--tokens-per-minute', `${PRO}=lots`])).toThrow(/--tokens-per-minute: .*gemini-2\.5-pro: 'lots' is not a number/);
    expect(() => resolveSettings(['--tokens-per-minute', `${PRO}=1,${PRO}=2`])).toThrow(/gemini-2\.5-pro is given twice/);
    expect(() => resolveSettings(['--quota-scope', 'key', '--tokens-per-minute', `${PRO}=5`])).toThrow(/per-model values need quotaScope "model"/);
  });
});
