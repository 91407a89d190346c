// Agent configuration and request validation (unit).
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AgentConfigError, modelLimiterOptions, parseServiceOptions } from '../../agent/config.ts';
import { parseCliConfig } from '../../cli/agent.ts';
import { createLimiter } from '../../agent/limiter.ts';
import { TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm, textResponse } from '../../instrumentation/testing.ts';
import { runRequestSchema } from '../../agent/request-schema.ts';

describe('agent configuration', () => {
  it('defaults reproduce the worked example', () => {
    const c = parseCliConfig([], {});
    expect(c).not.toBe('help');
    if (c === 'help') return;
    expect(c.replicas).toBe(1);
    expect(c.service).toMatchObject({ port: 8080, host: '127.0.0.1', permits: 10, tokensPerMinute: 900_000, replicaShare: 1, maxWaitMs: 20_000 });
  });

  it('flags win over env; replicas split the budget unless a share is given', () => {
    const env = { QUOTASCOPE_AGENT_PORT: '9000', QUOTASCOPE_AGENT_PERMITS: '3', QUOTASCOPE_AGENT_PROVIDER_URL: 'http://127.0.0.1:1' };
    const c = parseCliConfig(['--port', '9100', '--replicas', '3'], env);
    if (c === 'help') throw new Error('unexpected help');
    expect(c.service.port).toBe(9100);
    expect(c.service.permits).toBe(3);
    expect(c.service.replicaShare).toBeCloseTo(1 / 3);
    const shared = parseCliConfig(['--replicas', '3', '--replica-share', '0.5'], {});
    if (shared === 'help') throw new Error('unexpected help');
    expect(shared.service.replicaShare).toBe(0.5);
  });

  it('counted tokens and the quota window: input and a minute by default, bounded, named on error', () => {
    const d = parseCliConfig([], {});
    if (d === 'help') throw new Error('unexpected help');
    expect(d.service.countedTokens).toBe('input');
    expect(d.service.quotaWindowMs).toBe(60_000);
    const c = parseCliConfig(['--counted-tokens', 'total'], { QUOTASCOPE_AGENT_QUOTA_WINDOW_MS: '6000' });
    if (c === 'help') throw new Error('unexpected help');
    expect(c.service.countedTokens).toBe('total');
    expect(c.service.quotaWindowMs).toBe(6000);
    expect(() => parseCliConfig(['--counted-tokens', 'output'], {})).toThrow(/--counted-tokens/);
    expect(() => parseCliConfig(['--quota-window-ms', '500'], {})).toThrow(/--quota-window-ms/);
  });

  it('bad values name the flag or the variable they came from', () => {
    expect(() => parseCliConfig(['--permits', '0'], {})).toThrow(/--permits/);
    expect(() => parseCliConfig([], { LIMITER_MAX_WAIT_MS: 'soon' })).toThrow(/LIMITER_MAX_WAIT_MS/);
    expect(() => parseCliConfig(['--provider-url', 'ftp://x'], {})).toThrow(/--provider-url/);
    expect(() => parseCliConfig(['--replicas', '0'], {})).toThrow(/--replicas/);
    expect(() => parseCliConfig(['--bogus'], {})).toThrow(AgentConfigError);
    expect(() => parseServiceOptions({ permits: -1 })).toThrow(/permits/);
    expect(() => parseCliConfig(['--streaming', 'maybe'], {})).toThrow(/--streaming/);
    const streaming = parseCliConfig([], { QUOTASCOPE_AGENT_STREAMING: 'true' });
    expect(streaming !== 'help' && streaming.service.streaming).toBe(true);
  });

  it('ms settings above 2^31-1 (Node would fire the timer after 1 ms) fail naming the flag or option', () => {
    const over = String(2 ** 31);
    for (const flag of ['--max-wait-ms', '--http-timeout-ms', '--adaptive-latency-ms', '--tool-delay-ms', '--headers-timeout-ms', '--request-timeout-ms', '--keep-alive-timeout-ms', '--shutdown-grace-ms']) {
      expect(() => parseCliConfig([flag, over], {}), flag).toThrow(new RegExp(`${flag}: Too big`));
    }
    expect(() => parseServiceOptions({ maxWaitMs: 3_000_000_000 })).toThrow(/maxWaitMs: Too big/);
    expect(() => parseCliConfig(['--max-connections', '0'], {})).toThrow(/--max-connections/);
    expect(() => parseCliConfig(['--max-connections', '1e9'], {})).toThrow(/--max-connections: Too big/);
    expect(() => parseCliConfig(['--headers-timeout-ms', '20000', '--request-timeout-ms', '10000'], {})).toThrow(/--headers-timeout-ms: must be <= requestTimeoutMs/);
  });

  it('token settings have upper bounds too, named by their flag', () => {
    expect(() => parseCliConfig(['--tokens-per-minute', '1e15'], {})).toThrow(/--tokens-per-minute: Too big/);
    expect(() => parseCliConfig(['--estimated-tokens-per-call', '1e12'], {})).toThrow(/--estimated-tokens-per-call: Too big/);
    expect(() => parseCliConfig(['--initial-output-tokens', '1e12'], {})).toThrow(/--initial-output-tokens: Too big/);
  });

  it('--budget-window picks the token budget guard: rolling by default, bucket on request', async () => {
    const defaults = parseCliConfig([], {});
    expect(defaults !== 'help' && defaults.service.budgetWindow).toBe('rolling');
    const fromFlag = parseCliConfig(['--budget-window', 'bucket'], { QUOTASCOPE_AGENT_BUDGET_WINDOW: 'rolling' });
    expect(fromFlag !== 'help' && fromFlag.service.budgetWindow).toBe('bucket');
    const fromEnv = parseCliConfig([], { QUOTASCOPE_AGENT_BUDGET_WINDOW: 'bucket' });
    expect(fromEnv !== 'help' && fromEnv.service.budgetWindow).toBe('bucket');
    expect(() => parseCliConfig(['--budget-window', 'sliding'], {})).toThrow(/--budget-window/);
    expect(() => parseCliConfig([], { QUOTASCOPE_AGENT_BUDGET_WINDOW: 'fixed' })).toThrow(/QUOTASCOPE_AGENT_BUDGET_WINDOW/);
    for (const [budgetWindow, rolling] of [['rolling', true], ['bucket', false]] as const) {
      const delegate = new FakeLlm(async function* () {
        yield textResponse('ok', 10);
      });
      const options = parseServiceOptions({ budgetWindow });
      const limiter = await createLimiter(modelLimiterOptions(options, options.model), delegate, new Registry(), () => {});
      expect(limiter.budgetWindow).toBe(budgetWindow);
      expect(limiter.budget).toBeInstanceOf(TokenBudget);
      expect((limiter.budget as TokenBudget).rollingWindow).toBe(rolling);
      await limiter.close();
    }
  });

  it('request schema: defaults, bounds and field names', () => {
    expect(runRequestSchema.parse({ document: 'x' })).toMatchObject({ width: 4, branches: 8, trafficClass: 'interactive', userId: 'anonymous' });
    for (const bad of [{ document: '' }, { document: 'x', width: 0 }, { document: 'x', width: 10_000 }, { document: 'x', trafficClass: 'bulk' }]) {
      const result = runRequestSchema.safeParse(bad);
      expect(result.success).toBe(false);
      const field = Object.keys(bad).at(-1)!;
      expect(result.error?.issues[0]?.path[0]).toBe(field);
    }
  });
});
