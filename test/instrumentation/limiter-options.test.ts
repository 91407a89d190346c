// The limiter's options are defined once (instrumentation/limiter-options.ts): every layer
// that takes one (RateLimitedLlm, the agent service, serve, start, their flags) accepts
// exactly the values the definition accepts, and every flag shows the definition's help.
import { Command } from 'commander';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { agentServiceFields } from '../../agent/config.ts';
import { serveOptionsSchema } from '../../agent/serve/options.ts';
import { SERVICE_FLAGS } from '../../cli/agent.ts';
import { FlagSet, optionFlag, parseFlags } from '../../cli/flags.ts';
import { RateLimitedLlm } from '../../instrumentation/index.ts';
import { limiterOptionFields, optionHelp } from '../../instrumentation/limiter-options.ts';
import { FakeLlm } from '../../instrumentation/testing.ts';
import { startOptionsSchema } from '../../loadtest/start-options.ts';

const field = limiterOptionFields.shape;
type Key = keyof typeof field;
const KEYS = Object.keys(field) as Key[];

function acceptedByLlm(options: Record<string, unknown>): boolean {
  try {
    new RateLimitedLlm({ delegate: new FakeLlm(async function* () {}), name: 'x', maxConcurrent: 1, registry: new Registry(), ...options }).close();
    return true;
  } catch (error) {
    expect(String(error)).toMatch(new RegExp(Object.keys(options)[0]));
    return false;
  }
}

describe('the limiter options, defined once', () => {
  it('every option carries its help and unit, and its flag is the key in kebab-case', () => {
    for (const key of KEYS) {
      const help = optionHelp(field[key]);
      expect(help?.description, key).toMatch(/\w/);
      expect(help?.unit, key).toMatch(/\w/);
      expect(optionFlag(key, field[key]).flag).toBe(key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`));
    }
  });

  it('the agent service, serve and start take the same field: same bounds, same default, same help', () => {
    const shapes: Record<string, Record<string, z.ZodType>> = { agent: agentServiceFields.shape, serve: serveOptionsSchema.shape, start: startOptionsSchema.shape };
    for (const [name, shape] of Object.entries(shapes)) {
      for (const key of KEYS) {
        if (!(key in shape)) continue;
        expect(shape[key], `${name}.${key}`).toBe(field[key]);
      }
    }
    for (const key of ['permits', 'maxWaitMs', 'admission', 'requestDeadlineMs', 'maxWaiting', 'countedTokens'] as const) {
      expect(SERVICE_FLAGS[key].help, key).toBe(optionHelp(field[key])?.description);
    }
  });

  it('property: RateLimitedLlm, the service schema and the flag accept the same maxWaitMs, maxConcurrent (permits) and maxWaiting', () => {
    const layers = [
      { option: 'maxWaitMs', key: 'maxWaitMs' },
      { option: 'maxConcurrent', key: 'permits' },
      { option: 'maxWaiting', key: 'maxWaiting' },
    ] as const;
    fc.assert(
      fc.property(
        fc.constantFrom(...layers),
        fc.oneof(fc.integer({ min: -5, max: 4_000_000 }), fc.constantFrom(0, 1, 10_000, 10_001, 100_000, 100_001, 3_600_000, 3_600_001), fc.double({ min: 0, max: 10, noNaN: true })),
        ({ option, key }, value) => {
          const definition = field[key].safeParse(value).success;
          expect(acceptedByLlm({ [option]: value })).toBe(definition);
          expect(agentServiceFields.shape[key].safeParse(value).success).toBe(definition);
          const command = new Command('demo');
          new FlagSet(command, { [key]: optionFlag(key, field[key]) });
          const flag = () => parseFlags(command, [`--${optionFlag(key, field[key]).flag}`, String(value)], {});
          if (definition) expect(flag).not.toThrow();
          else expect(flag).toThrow(new RegExp(`^--${optionFlag(key, field[key]).flag}: `));
        },
      ),
      { numRuns: 300 },
    );
  });
});
