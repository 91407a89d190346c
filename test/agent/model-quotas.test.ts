// One quota scope for the limiters: each model's limiter gets its own model's budget (Gemini
// counts quotas per project and per model), or, with quotaScope key, every model's limiter
// draws from one shared budget.
import { LlmAgent } from '@google/adk';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServiceOptions } from '../../agent/config.ts';
import { type WrappedModels, wrapModels } from '../../agent/serve/wrap-models.ts';
import { parseServeArgs } from '../../cli/serve.ts';
import { parseCliConfig } from '../../cli/agent.ts';

const PROVIDER = { providerUrl: 'http://127.0.0.1:9', apiKey: 'test-key', httpTimeoutMs: 1000 };
const FLASH = 'gemini-2.5-flash';
const PRO = 'gemini-2.5-pro';

let wrapped: WrappedModels | undefined;
afterEach(async () => {
  await wrapped?.close();
  wrapped = undefined;
});

const twoModels = () => [new LlmAgent({ name: 'router', model: FLASH }), new LlmAgent({ name: 'planner', model: PRO })];

describe('per-model limiter budgets', () => {
  it("gives each model's limiter its own model's budget, a model not named the * value", async () => {
    const options = parseServiceOptions({ tokensPerMinute: { [PRO]: 450_000, '*': 800_000 }, replicaShare: 0.5 });
    wrapped = await wrapModels(twoModels(), options, PROVIDER, new Registry());
    expect(wrapped.limiters.get(FLASH)?.budget.capacity).toBe(400_000);
    expect(wrapped.limiters.get(PRO)?.budget.capacity).toBe(225_000);
    expect(wrapped.limiters.get(FLASH)?.budget).not.toBe(wrapped.limiters.get(PRO)?.budget);
  });

  it('gives every model the whole number when one is given (each model has its own quota)', async () => {
    wrapped = await wrapModels(twoModels(), parseServiceOptions({ tokensPerMinute: 600_000 }), PROVIDER, new Registry());
    expect(wrapped.limiters.get(FLASH)?.budget.capacity).toBe(600_000);
    expect(wrapped.limiters.get(PRO)?.budget.capacity).toBe(600_000);
  });

  it('shares one budget among the models with quotaScope key', async () => {
    wrapped = await wrapModels(twoModels(), parseServiceOptions({ tokensPerMinute: 600_000, quotaScope: 'key' }), PROVIDER, new Registry());
    const flash = wrapped.limiters.get(FLASH);
    expect(flash?.budget).toBe(wrapped.limiters.get(PRO)?.budget);
    expect(flash?.budget.capacity).toBe(600_000);
  });
});

describe('per-model flags of serve and agent', () => {
  it('reads N, MODEL=N,… and N,MODEL=N', () => {
    const served = parseServeArgs(['--agent', 'a.ts', '--tokens-per-minute', `${FLASH}=900000,${PRO}=450000`], {});
    expect(served !== 'help' && served.tokensPerMinute).toEqual({ [FLASH]: 900_000, [PRO]: 450_000 });
    const mixed = parseServeArgs(['--agent', 'a.ts', '--tokens-per-minute', `900000,${PRO}=450000`, '--quota-scope', 'model'], {});
    expect(mixed !== 'help' && mixed.tokensPerMinute).toEqual({ '*': 900_000, [PRO]: 450_000 });
    const agent = parseCliConfig([], { QUOTASCOPE_AGENT_TOKENS_PER_MINUTE: `${PRO}=1000` });
    expect(agent !== 'help' && agent.service.tokensPerMinute).toEqual({ [PRO]: 1000 });
  });

  it('names the flag and the model in an error', () => {
    expect(() => parseServeArgs(['--agent', 'a.ts', '--tokens-per-minute', `${PRO}=0`], {})).toThrow(/--tokens-per-minute: .*gemini-2\.5-pro: Too small/);
    expect(() => parseServeArgs(['--agent', 'a.ts', '--tokens-per-minute', `${PRO}=1e13`], {})).toThrow(/--tokens-per-minute: .*gemini-2\.5-pro: Too big/);
    expect(() => parseServeArgs(['--agent', 'a.ts', '--quota-scope', 'key', '--tokens-per-minute', `${PRO}=5`], {})).toThrow(
      /--tokens-per-minute: per-model values need quotaScope "model"/,
    );
    expect(() => parseServeArgs(['--agent', 'a.ts', '--quota-scope', 'project'], {})).toThrow(/--quota-scope/);
  });
});
