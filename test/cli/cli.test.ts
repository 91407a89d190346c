// The `quotascope` bin as a user runs it: --help for the program and every command (each
// flag with its default and env variable), a bad flag (one line, exit 2) and runtime
// failures (one line, exit 1, no stack): a port in use, a missing tool,
// an unreachable provider.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLine } from '../../cli/mock-provider.ts';
import { buildProgram, runCli } from '../../cli/program.ts';
import { defaultConfig } from '../../mock-provider/config.ts';
import { freePort } from '../../loadtest/stack/processes.ts';

const bin = join(import.meta.dirname, '../../cli/quotascope.ts');
const scratch = mkdtempSync(join(tmpdir(), 'qs-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function quotascope(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const result = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** One line on stderr, no stack frames. */
function expectOneLine(stderr: string): void {
  expect(stderr.trimEnd().split('\n'), stderr).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
}

const COMMANDS = ['start', 'serve', 'agent', 'mock-provider', 'loadtest', 'plan', 'dashboards', 'convert-trace', 'tools'];

describe('quotascope --help', () => {
  it('lists every command', () => {
    const { code, stdout } = quotascope(['--help']);
    expect(code).toBe(0);
    for (const name of [...COMMANDS, 'report']) expect(stdout).toMatch(new RegExp(`^ {2}${name} `, 'm'));
  });

  it('with no command prints the help on stderr and exits 2', () => {
    const { code, stderr } = quotascope([]);
    expect(code).toBe(2);
    expect(stderr).toContain('Commands:');
  });

  it('--version prints the package version', () => {
    const { code, stdout } = quotascope(['--version']);
    expect(code).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe.each(COMMANDS)('quotascope %s', (name) => {
  const command = buildProgram().commands.find((c) => c.name() === name);

  it('--help documents every flag with its default and env variable', () => {
    expect(command).toBeDefined();
    const { code, stdout } = quotascope([name, '--help']);
    expect(code).toBe(0);
    // Help lines wrap at 80 columns: compare with the whitespace folded.
    const text = stdout.replace(/\s+/g, ' ');
    for (const option of command?.options ?? []) {
      expect(text).toContain(option.long);
      if (option.envVar) expect(text).toContain(`env ${option.envVar}`);
      const shown = option.defaultValueDescription ?? (option.defaultValue === undefined ? undefined : JSON.stringify(option.defaultValue));
      if (shown !== undefined) expect(text).toContain(`default ${shown.replace(/\s+/g, ' ')}`);
    }
  });

  it('a bad flag gives one line naming it and exit 2', () => {
    const { code, stdout, stderr } = quotascope([name, '--no-such-flag', ...(name === 'loadtest' || name === 'convert-trace' ? ['x'] : [])]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expectOneLine(stderr);
    expect(stderr).toMatch(new RegExp(`^${name}: --no-such-flag: unknown flag`));
  });
});

describe('quotascope report (parses its own flags)', () => {
  it('--help lists its flags; a bad flag is one line and exit 2', () => {
    const help = quotascope(['report', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--prometheus');
    const bad = quotascope(['report', '--no-such-flag']);
    expect(bad.code).toBe(2);
    expectOneLine(bad.stderr);
    expect(bad.stderr).toMatch(/^report: .*--no-such-flag/);
  });
});

describe('bad values name the flag or the env variable', () => {
  it.each([
    [['mock-provider', '--ttft', '{bad'], {}, /^mock-provider: .*--ttft.*not valid JSON/],
    [['mock-provider', '--seed', 'x'], {}, /^mock-provider: .*--seed/],
    [['mock-provider'], { QUOTASCOPE_MOCK_PROVIDER_TOKENS_PER_MINUTE: 'lots' }, /^mock-provider: .*MOCK_PROVIDER_TOKENS_PER_MINUTE/],
    [['agent', '--permits', '0'], {}, /^agent: --permits: /],
    [['agent'], { QUOTASCOPE_AGENT_MAX_WAIT_MS: 'soon' }, /^agent: QUOTASCOPE_AGENT_MAX_WAIT_MS: /],
    // A former name (before QUOTASCOPE_<COMMAND>_<FLAG>) is still read, and named when its value is bad.
    [['agent'], { LIMITER_MAX_WAIT_MS: 'soon' }, /^agent: LIMITER_MAX_WAIT_MS: /],
    [['plan', '--example', 'review-agent', '--latency', 'soon'], {}, /^plan: --latency: /],
    [['plan', '--example', 'review-agent'], { PLAN_REPLICAS: '0' }, /^plan: PLAN_REPLICAS: /],
    [['start', '--rate', '-1'], {}, /^start: --rate: /],
    [['loadtest', 'burst', '--scale', '0'], {}, /^loadtest: --scale: /],
    [['loadtest', 'no-such-scenario'], {}, /^loadtest: <scenario>: .*no-such-scenario/],
  ])('%j %j', (args, env, message) => {
    const { code, stderr } = quotascope(args, { ...process.env, ...env });
    expect(code).toBe(2);
    expectOneLine(stderr);
    expect(stderr).toMatch(message);
  });
});

describe('runtime failures: one line, exit 1', () => {
  it('a port in use (mock provider and agent service)', async () => {
    const busy = createServer();
    busy.listen(0, '127.0.0.1');
    await once(busy, 'listening');
    const port = (busy.address() as { port: number }).port;
    try {
      for (const name of ['mock-provider', 'agent']) {
        const { code, stderr } = quotascope([name, '--port', String(port)]);
        expect(code, name).toBe(1);
        expectOneLine(stderr);
        expect(stderr).toBe(`${name}: cannot listen on 127.0.0.1:${port}: the port is in use (pick another with --port)\n`);
      }
    } finally {
      busy.close();
    }
  });

  it('an invalid port is a usage error (exit 2), checked before listening', () => {
    const { code, stderr } = quotascope(['mock-provider', '--port', '99999']);
    expect(code).toBe(2);
    expectOneLine(stderr);
    expect(stderr).toMatch(/^mock-provider: --port: .*99999/);
  });

  it('a missing tool', () => {
    const empty = join(scratch, 'no-tools');
    const { code, stdout, stderr } = quotascope(['tools'], { ...process.env, PATH: '/nonexistent', QUOTASCOPE_BIN: empty });
    expect(code).toBe(1);
    expect(stdout).toMatch(/^k6 +missing$/m);
    expectOneLine(stderr);
    expect(stderr).toMatch(/^tools: missing k6\b.*; install with: /);
  });

  it('an unreachable provider', async () => {
    const closed = await freePort();
    const args = ['loadtest', 'steady-40rpm', '--plan', '--prometheus', 'http://127.0.0.1:9', '--mock-url', `http://127.0.0.1:${closed}`];
    const { code, stderr } = quotascope(args);
    expect(code).toBe(1);
    expectOneLine(stderr);
    expect(stderr).toMatch(new RegExp(`^loadtest: .*127\\.0\\.0\\.1:${closed}`));
  });
});

describe('the mock provider start line', () => {
  it('prints the address really bound, and the URL to reach it', () => {
    const line = startLine({ host: '0.0.0.0', port: 8090, url: 'http://127.0.0.1:8090' }, defaultConfig, undefined);
    expect(line).toMatch(/^mock-provider listening on http:\/\/0\.0\.0\.0:8090 \(base URL http:\/\/127\.0\.0\.1:8090\) /);
  });

  it('--host and --port as given reach the running server', async () => {
    const child = spawn(process.execPath, [bin, 'mock-provider', '--port', '0', '--host', '127.0.0.2'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      for await (const chunk of child.stdout) {
        out += String(chunk);
        if (out.includes('\n')) break;
      }
      expect(out).toMatch(/^mock-provider listening on http:\/\/127\.0\.0\.2:\d+ \(\d+ RPM/);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});

describe('commands implemented as main(argv)', () => {
  it('are listed, and get every argument after their name', async () => {
    const seen: string[][] = [];
    const program = buildProgram([
      {
        name: 'echo-args',
        description: 'test command',
        load: async () => (argv) => {
          seen.push(argv);
          return 3;
        },
      },
    ]);
    expect(program.helpInformation()).toMatch(/^ {2}echo-args /m);
    const code = await runCli(['echo-args', '--agent', 'x.ts', '--help', '-v'], program);
    expect(code).toBe(3);
    expect(seen).toEqual([['--agent', 'x.ts', '--help', '-v']]);
    process.exitCode = 0;
  });
});

describe('issue 29 low rows: one line, the right exit code, nothing left behind', () => {
  it('mock-provider --port -1 is a usage error (exit 2, one line)', () => {
    const { code, stderr } = quotascope(['mock-provider', '--port', '-1']);
    expect(code).toBe(2);
    expectOneLine(stderr);
    expect(stderr).toMatch(/--port/);
  });

  it('report --title -1 names the flag in one line (exit 2)', () => {
    const { code, stderr } = quotascope(['report', '--title', '-1']);
    expect(code).toBe(2);
    expectOneLine(stderr);
    expect(stderr).toMatch(/^report: --title: .*--title=VALUE/);
  });

  it.each([
    [['mock-provider', '--port', '0x10'], /--port/],
    [['mock-provider', '--seed', '0x10'], /--seed/],
    [['plan', '--quota-tpm', '0x10'], /--quota-tpm/],
    [['report', '--scrape-interval', '0x10'], /--scrape-interval/],
    [['start', '--duration', '1.5'], /--duration/],
    [['start', '--burst-users', '1.5'], /--burst-users/],
  ])('%j: a number in hex, or a fraction for a whole number, is refused (exit 2)', (args, flag) => {
    const { code, stderr } = quotascope(args as string[]);
    expect(code).toBe(2);
    expectOneLine(stderr);
    expect(stderr).toMatch(flag);
  });

  it('dashboards --out on a full disk fails in one line and leaves no *.partial file', () => {
    const out = join(scratch, 'full-disk');
    // A file size limit (ulimit -f, in KB) makes the writes fail half-way, as a full disk does.
    const result = spawnSync('bash', ['-c', `ulimit -f 16; exec "${process.execPath}" "${bin}" dashboards --out "${out}"`], { encoding: 'utf8', timeout: 60_000 });
    expect(result.status).toBe(1);
    expectOneLine(result.stderr);
    const left = spawnSync('find', [out, '-name', '*.partial'], { encoding: 'utf8' }).stdout.trim();
    expect(left).toBe('');
  });
});
