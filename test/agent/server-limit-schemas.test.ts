// The server limits are one schema: the agent service (and so `serve`) and the mock provider
// take the same fields with the same defaults, bounds and cross-field rule.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { agentServiceOptionsSchema, parseServiceOptions } from '../../agent/config.ts';
import { DEFAULT_MAX_CONNECTIONS, MAX_TIMER_MS } from '../../agent/http-server.ts';
import { serverLimitsSchema } from '../../mock-provider/config.ts';

const LIMIT_KEYS = ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxConnections'] as const;

describe('server limits', () => {
  it('have one set of defaults for the agent and the mock', () => {
    const agent = parseServiceOptions({});
    const mock = serverLimitsSchema.parse({});
    expect(Object.fromEntries(LIMIT_KEYS.map((key) => [key, agent[key]]))).toEqual(mock);
    expect(mock.maxConnections).toBe(DEFAULT_MAX_CONNECTIONS);
  });

  it('accept and refuse the same values in the agent and the mock', () => {
    const value = fc.oneof(fc.integer({ min: -5, max: 2_000_000 }), fc.constantFrom(0, 1, 1_000_000, 1_000_001, MAX_TIMER_MS, MAX_TIMER_MS + 1), fc.double());
    fc.assert(
      fc.property(fc.record({ headersTimeoutMs: value, requestTimeoutMs: value, keepAliveTimeoutMs: value, maxConnections: value }, { requiredKeys: [] }), (limits) => {
        const agent = agentServiceOptionsSchema.safeParse(limits);
        const mock = serverLimitsSchema.safeParse(limits);
        expect(agent.success).toBe(mock.success);
        const fields = (error: typeof mock.error) => [...new Set(error?.issues.map((issue) => String(issue.path[0])))].sort();
        expect(fields(agent.error)).toEqual(fields(mock.error));
      }),
    );
  });

  it('refuse a headers timeout above the request timeout, naming headersTimeoutMs', () => {
    const limits = { headersTimeoutMs: 20_000, requestTimeoutMs: 10_000 };
    for (const result of [agentServiceOptionsSchema.safeParse(limits), serverLimitsSchema.safeParse(limits)]) {
      expect(result.success).toBe(false);
      expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['headersTimeoutMs']);
    }
  });
});
