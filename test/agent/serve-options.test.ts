// `serve`'s options: the agent service's limiter flags and variables, its own --agent,
// --app-name and --no-wrap, and errors naming the flag or variable.
import { describe, expect, it } from 'vitest';
import { parseAgentModuleSpec } from '../../agent/agent-module.ts';
import { parseServeArgs } from '../../cli/serve.ts';
import { limiterNameFor } from '../../agent/serve/wrap-models.ts';

describe('parseServeArgs', () => {
  it('takes the agent service limiter flags over their env variables, with the same defaults', () => {
    const options = parseServeArgs(
      ['--agent', 'agents/my_agent.ts#root_agent', '--permits', '4', '--batch-max-permits', 'off', '--app-name', 'my_app'],
      { QUOTASCOPE_SERVE_PERMITS: '9', QUOTASCOPE_SERVE_MAX_WAIT_MS: '1500', QUOTASCOPE_SERVE_QUOTA_SHARING: 'adaptive' },
    );
    expect(options).toMatchObject({
      agent: 'agents/my_agent.ts#root_agent',
      appName: 'my_app',
      wrap: true,
      permits: 4,
      maxWaitMs: 1500,
      quotaSharing: 'adaptive',
      batchMaxPermits: 'off',
      tokensPerMinute: 900_000,
      providerUrl: 'http://127.0.0.1:8090',
      port: 8080,
    });
    // serve has no authentication and shares `app:` state across users: loopback unless a host is given.
    expect(parseServeArgs(['--agent', 'a.ts'], {})).toMatchObject({ host: '127.0.0.1' });
    expect(parseServeArgs(['--agent', 'a.ts', '--no-wrap'], {})).toMatchObject({ wrap: false });
    expect(parseServeArgs(['--help'], {})).toBe('help');
  });

  it('names the flag or variable of a bad value', () => {
    expect(() => parseServeArgs(['--permits', '2'], {})).toThrow(/^--agent: /);
    expect(() => parseServeArgs(['--agent', 'a.ts', '--permits', '0'], {})).toThrow(/^--permits: /);
    expect(() => parseServeArgs(['--agent', 'a.ts'], { LIMITER_PERMITS: 'many' })).toThrow(/^LIMITER_PERMITS: /);
    expect(() => parseServeArgs(['--agent', 'a.ts', '--quota-sharing', 'central'], {})).toThrow(/--redis-url \(QUOTASCOPE_SERVE_REDIS_URL\): required/);
    expect(() => parseServeArgs(['--agent', 'a.ts', '--app-name', 'my.app'], {})).toThrow(/^--app-name: /);
    expect(() => parseServeArgs(['--agent', 'a.ts', '--tool-delay-ms', '5'], {})).toThrow(/tool-delay-ms/);
  });
});

describe('agent module specs and limiter names', () => {
  it('FILE[#export], rootAgent by default', () => {
    expect(parseAgentModuleSpec('x/agent.ts', '/w')).toEqual({ file: '/w/x/agent.ts', exportName: 'rootAgent' });
    expect(parseAgentModuleSpec('/a/b.js#my_root', '/w')).toEqual({ file: '/a/b.js', exportName: 'my_root' });
    expect(() => parseAgentModuleSpec('#rootAgent')).toThrow(/no file given/);
    expect(() => parseAgentModuleSpec('a.ts#not-a-name')).toThrow(/"not-a-name" is not an export name/);
  });

  it('one model: the configured limiter name; several: one per model name', () => {
    expect(limiterNameFor('gemini', 'gemini-2.5-flash', 1)).toBe('gemini');
    expect(limiterNameFor('gemini', 'gemini-2.5-pro', 2)).toBe('gemini-2_5-pro');
    expect(limiterNameFor('team', 'gemini-2.5-pro', 2)).toBe('team-gemini-2_5-pro');
  });
});
