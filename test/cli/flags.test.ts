// Flags made from zod schemas (defaults, bounds, env variables, where a value came from),
// the distribution flag text both ways, and the one-line error formatter.
import { Command, CommanderError } from 'commander';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeFailure, UsageError } from '../../cli/errors.ts';
import { envName, FlagSet, type FlagSetOptions, parseFlags } from '../../cli/flags.ts';
import { formatDistribution, parseDistribution } from '../../cli/mock-provider.ts';
import { boundedDistributionSchema } from '../../mock-provider/config.ts';

function flagSet(options: FlagSetOptions = {}) {
  const command = new Command('demo');
  const flags = new FlagSet(
    command,
    {
      permits: { flag: 'permits', help: 'permits', schema: z.int().min(1).max(100).default(10) },
      mode: { flag: 'mode', help: 'mode', schema: z.enum(['a', 'b']).default('a') },
      on: { flag: 'on', help: 'switch', schema: z.boolean().default(false), switch: true },
      cap: { flag: 'cap', help: 'cap', schema: z.union([z.literal('off'), z.int().min(1)]).optional() },
    },
    options,
  );
  return { command, flags };
}

describe('FlagSet', () => {
  it('defaults come from the schema and are not "given"; flags win over env variables', () => {
    const { command, flags } = flagSet();
    parseFlags(command, ['--mode', 'b'], { QUOTASCOPE_DEMO_MODE: 'a', QUOTASCOPE_DEMO_PERMITS: '7' });
    expect(flags.values()).toEqual({ permits: 7, mode: 'b', on: false, cap: undefined });
    expect(flags.given()).toEqual({ permits: 7, mode: 'b' });
    expect(flags.originOf('mode')).toBe('--mode');
    expect(flags.originOf('permits')).toBe('QUOTASCOPE_DEMO_PERMITS');
    expect(flags.originOf('on')).toBe('--on (QUOTASCOPE_DEMO_ON)');
  });

  it('a switch alone is true, and takes true|false from its env variable', () => {
    const alone = flagSet();
    parseFlags(alone.command, ['--on'], {});
    expect(alone.flags.values().on).toBe(true);
    const fromEnv = flagSet();
    parseFlags(fromEnv.command, [], { QUOTASCOPE_DEMO_ON: 'false' });
    expect(fromEnv.flags.given()).toEqual({ on: false });
  });

  it('a value out of bounds names the flag, or the env variable it came from', () => {
    expect(() => parseFlags(flagSet().command, ['--permits', '0'], {})).toThrow(/^--permits: Too small/);
    expect(() => parseFlags(flagSet().command, [], { QUOTASCOPE_DEMO_PERMITS: '101' })).toThrow(/^QUOTASCOPE_DEMO_PERMITS: Too big/);
    expect(() => parseFlags(flagSet().command, ['--mode', 'c'], {})).toThrow(UsageError);
    expect(() => parseFlags(flagSet().command, ['--cap', 'half'], {})).toThrow(/^--cap: /);
    expect(() => parseFlags(flagSet().command, ['--nope'], {})).toThrow(/^--nope: unknown flag/);
  });

  it('one rule names every env variable: QUOTASCOPE_, the command, the flag', () => {
    expect(envName('agent', 'max-wait-ms')).toBe('QUOTASCOPE_AGENT_MAX_WAIT_MS');
    expect(envName('mock-provider', 'tokens-per-minute')).toBe('QUOTASCOPE_MOCK_PROVIDER_TOKENS_PER_MINUTE');
  });

  it('a former env name is read as a deprecated alias, with one line naming the new name; the new name wins', () => {
    const lines: string[] = [];
    const warn = (line: string) => lines.push(line);
    const former = flagSet({ formerEnvPrefix: 'DEMO_', warn });
    parseFlags(former.command, [], { DEMO_PERMITS: '7' });
    expect(former.flags.given()).toEqual({ permits: 7 });
    expect(former.flags.originOf('permits')).toBe('DEMO_PERMITS');
    expect(lines).toEqual(['[quotascope] DEMO_PERMITS is deprecated: set QUOTASCOPE_DEMO_PERMITS instead']);
    expect(() => parseFlags(flagSet({ formerEnvPrefix: 'DEMO_', warn }).command, [], { DEMO_PERMITS: '101' })).toThrow(/^DEMO_PERMITS: Too big/);
    lines.length = 0;
    const both = flagSet({ formerEnvPrefix: 'DEMO_', warn });
    parseFlags(both.command, [], { DEMO_PERMITS: '7', QUOTASCOPE_DEMO_PERMITS: '8' });
    expect(both.flags.given()).toEqual({ permits: 8 });
    expect(both.flags.originOf('permits')).toBe('QUOTASCOPE_DEMO_PERMITS');
    expect(lines).toEqual(['[quotascope] DEMO_PERMITS is deprecated and ignored: QUOTASCOPE_DEMO_PERMITS is set']);
    lines.length = 0;
    parseFlags(flagSet({ formerEnvPrefix: 'DEMO_', warn }).command, ['--permits', '9'], { DEMO_PERMITS: '7' });
    expect(lines).toEqual([]);
  });

  it('every integer within the bounds parses to itself; every one outside is refused', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 1000 }), (n) => {
        const { command, flags } = flagSet();
        const parse = () => parseFlags(command, ['--permits', String(n)], {});
        if (n >= 1 && n <= 100) {
          parse();
          expect(flags.values().permits).toBe(n);
        } else {
          expect(parse).toThrow(/^--permits: /);
        }
      }),
    );
  });

  it('a number-or-off flag takes either', () => {
    for (const [text, value] of [['off', 'off'], ['5', 5]] as const) {
      const { command, flags } = flagSet();
      parseFlags(command, ['--cap', text], {});
      expect(flags.values().cap).toBe(value);
    }
  });
});

describe('distribution flags', () => {
  it('format and parse are inverses for every valid distribution', () => {
    const value = fc.double({ min: 0, max: 1e6, noNaN: true });
    const distribution = fc.oneof(
      value.map((v) => ({ kind: 'fixed' as const, value: v })),
      fc.tuple(value, value).map(([a, b]) => ({ kind: 'uniform' as const, min: Math.min(a, b), max: Math.max(a, b) })),
      fc.tuple(value, value).map(([mean, stddev]) => ({ kind: 'normal' as const, mean, stddev })),
      fc.tuple(value, value).map(([a, b]) => ({ kind: 'lognormal' as const, p50: Math.min(a, b) + 1, p99: Math.max(a, b) + 1 })),
    );
    fc.assert(
      fc.property(distribution, (d) => {
        expect(boundedDistributionSchema(1e7).safeParse(d).success).toBe(true);
        expect(parseDistribution(formatDistribution(d))).toEqual(d);
      }),
    );
  });

  it('bad text says what is wrong', () => {
    expect(() => parseDistribution('{bad')).toThrow(/not valid JSON/);
    expect(() => parseDistribution('uniform:1')).toThrow(/uniform takes 2 number/);
    expect(() => parseDistribution('fixed:x')).toThrow(/expected numbers/);
    expect(() => parseDistribution('gamma:1,2')).toThrow(/unknown distribution "gamma"/);
  });
});

describe('describeFailure', () => {
  const systemError = (code: string, extra: Record<string, unknown>) => Object.assign(new Error(`${code} raw`), { code, ...extra });

  it.each([
    [new UsageError('--x: bad'), '--x: bad', 2],
    [new CommanderError(1, 'commander.unknownOption', "error: unknown option '--colour'\n(Did you mean --color?)"), '--colour: unknown flag (did you mean --color?)', 2],
    [new CommanderError(1, 'commander.optionMissingArgument', "error: option '--port <port>' argument missing"), '--port: missing value', 2],
    [systemError('EADDRINUSE', { address: '127.0.0.1', port: 8090, syscall: 'listen' }), 'cannot listen on 127.0.0.1:8090: the port is in use (pick another with --port)', 1],
    [systemError('EACCES', { address: '0.0.0.0', port: 80, syscall: 'listen' }), 'cannot listen on 0.0.0.0:80: permission denied (ports below 1024 need privileges)', 1],
    [
      Object.assign(new TypeError('fetch failed'), { cause: systemError('ECONNREFUSED', { address: '127.0.0.1', port: 9 }) }),
      'cannot reach 127.0.0.1:9: connection refused (is it running?)',
      1,
    ],
    [new Error('first line\n    at somewhere (file.ts:1:1)'), 'first line', 1],
  ])('%s', (error, line, exitCode) => {
    expect(describeFailure(error)).toEqual({ line, exitCode });
  });
});
