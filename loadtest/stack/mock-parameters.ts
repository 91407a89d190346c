// What the planner needs from the mock provider's live config (GET /admin/config): its
// quota, the mean output tokens and the mean call latency its distributions produce.
import { z } from 'zod';
import type { PerModel } from '../../agent/per-model.ts';
import type { CountedTokenKind } from '../../instrumentation/counted-tokens.ts';
import { getMockConfig } from './mock-admin.ts';

/** The mock provider's name for each kind of counted tokens (its `countedTokens` field). */
export const MOCK_COUNTED_TOKENS = { input: 'input', total: 'input+output' } as const satisfies Record<CountedTokenKind, string>;

const distribution = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('fixed'), value: z.number() }),
  z.object({ kind: z.literal('uniform'), min: z.number(), max: z.number() }),
  z.object({ kind: z.literal('normal'), mean: z.number(), stddev: z.number() }),
  z.object({ kind: z.literal('lognormal'), p50: z.number(), p99: z.number() }),
]);
type Distribution = z.infer<typeof distribution>;

/** A quota for every model, or per model (the mock's quotaScope model). */
const perModelQuota = z.union([z.number().positive(), z.record(z.string(), z.number().positive())]);

const mockConfigSchema = z.object({
  requestsPerMinute: perModelQuota,
  tokensPerMinute: perModelQuota,
  timeToFirstTokenMs: distribution,
  perOutputTokenMs: distribution,
  outputTokens: distribution,
  countedTokens: z.enum(['input', 'input+output']).default('input'),
});

/** z for the 99th percentile of a standard normal. */
const Z99 = 2.326_347_874;

/** The mean of a distribution (lognormal: p50 · e^(σ²/2), σ from the p50/p99 pair). */
export function meanOf(d: Distribution): number {
  switch (d.kind) {
    case 'fixed':
      return d.value;
    case 'uniform':
      return (d.min + d.max) / 2;
    case 'normal':
      return d.mean;
    case 'lognormal': {
      const sigma = Math.log(d.p99 / d.p50) / Z99;
      return d.p50 * Math.exp((sigma * sigma) / 2);
    }
  }
}

export interface MockParameters {
  /** Per model, or one number for every model (each model has its own quota unless the mock's quotaScope is key). */
  quotaRequestsPerMinute: PerModel;
  quotaTokensPerMinute: PerModel;
  outputTokensPerCall: number;
  /** Which tokens the mock's token quota counts. */
  countedTokens: CountedTokenKind;
  /** Mean provider-side call time: first token, then the rest of the output. */
  latencySeconds: number;
}

export function mockParameters(config: unknown): MockParameters {
  const parsed = mockConfigSchema.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`mock provider config: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const c = parsed.data;
  const output = meanOf(c.outputTokens);
  return {
    quotaRequestsPerMinute: c.requestsPerMinute,
    quotaTokensPerMinute: c.tokensPerMinute,
    outputTokensPerCall: output,
    countedTokens: c.countedTokens === 'input+output' ? 'total' : 'input',
    latencySeconds: (meanOf(c.timeToFirstTokenMs) + Math.max(0, output - 1) * meanOf(c.perOutputTokenMs)) / 1000,
  };
}

/** Reads the running mock provider's config. */
export async function fetchMockParameters(mockUrl: string): Promise<MockParameters> {
  return mockParameters(await getMockConfig(mockUrl));
}
