// The CLI: file < env < flags precedence, --help, and a real process serving on a free port.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveSettings } from '../../cli/mock-provider.ts';

const bin = join(import.meta.dirname, '../../cli/quotascope.ts');
const dir = mkdtempSync(join(tmpdir(), 'mock-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('configuration sources', () => {
  const yamlPath = join(dir, 'mock.yaml');
  writeFileSync(
    yamlPath,
    [
      'requestsPerMinute: 10',
      'tokensPerMinute: 100',
      'quotaWindow: sliding',
      'faults:',
      '  http503Probability: 0.25',
      'timeline:',
      '  - at: 60',
      '    set: { tokensPerMinute: 50 }',
    ].join('\n'),
  );

  it('flags win over env, env over the file; untouched file values stay', () => {
    const { config, listen } = resolveSettings(
      ['--config', yamlPath, '--requests-per-minute', '30', '--ttft', 'lognormal:500,2000', '--fault-http-500', '0.1', '--port', '0'],
      { QUOTASCOPE_MOCK_PROVIDER_REQUESTS_PER_MINUTE: '20', QUOTASCOPE_MOCK_PROVIDER_COUNTED_TOKENS: 'input+output', QUOTASCOPE_MOCK_PROVIDER_SEED: '9' },
    );
    expect(config.requestsPerMinute).toBe(30);
    expect(config.tokensPerMinute).toBe(100);
    expect(config.quotaWindow).toBe('sliding');
    expect(config.countedTokens).toBe('input+output');
    expect(config.seed).toBe(9);
    expect(config.timeToFirstTokenMs).toEqual({ kind: 'lognormal', p50: 500, p99: 2000 });
    expect(config.faults).toMatchObject({ http500Probability: 0.1, http503Probability: 0.25 });
    expect(config.timeline).toEqual([{ at: 60, set: { tokensPerMinute: 50 } }]);
    expect(listen.port).toBe(0);
  });

  it('a JSON config file works too, and a bad value names its source and field', () => {
    const jsonPath = join(dir, 'mock.json');
    writeFileSync(jsonPath, JSON.stringify({ requestsPerDay: 5000, maxConcurrent: 8 }));
    const { config } = resolveSettings(['--config', jsonPath], {});
    expect(config.requestsPerDay).toBe(5000);
    expect(config.maxConcurrent).toBe(8);
    writeFileSync(jsonPath, JSON.stringify({ quotaWindow: 'hourly' }));
    expect(() => resolveSettings(['--config', jsonPath], {})).toThrow(/config file .*mock\.json: .*quotaWindow/);
    expect(() => resolveSettings([], { QUOTASCOPE_MOCK_PROVIDER_TOKENS_PER_MINUTE: 'lots' })).toThrow(/QUOTASCOPE_MOCK_PROVIDER_TOKENS_PER_MINUTE/);
  });
});

describe('the CLI process', () => {
  it('--help documents every flag with its env variable', () => {
    const result = spawnSync(process.execPath, [bin, 'mock-provider', '--help'], { encoding: 'utf8' });
    expect(result.status).toBe(0);
    const flags = [...result.stdout.matchAll(/^ {2}--([a-z0-9-]+)/gm)].map((m) => m[1]);
    for (const flag of ['port', 'host', 'config', 'seed', 'requests-per-minute', 'tokens-per-minute', 'requests-per-day', 'max-concurrent', 'quota-window', 'counted-tokens', 'throttle-probability', 'ttft', 'per-token-ms', 'output-tokens', 'fault-http-500', 'fault-stall', 'admin-token', 'help']) {
      expect(flags).toContain(flag);
    }
    for (const flag of flags.filter((f) => f !== 'help')) {
      expect(result.stdout).toContain(`env QUOTASCOPE_MOCK_PROVIDER_${flag.toUpperCase().replaceAll('-', '_')}`);
    }
  });

  it('rejects a bad flag value with exit code 2 and the field', () => {
    const result = spawnSync(process.execPath, [bin, 'mock-provider', '--quota-window', 'hourly'], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/--quota-window: .*quotaWindow/);
  });

  it('serves on a free port, requires the admin token from the env, stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [bin, 'mock-provider', '--port', '0', '--ttft', 'fixed:0', '--per-token-ms', 'fixed:0'], {
      env: { ...process.env, QUOTASCOPE_MOCK_PROVIDER_ADMIN_TOKEN: 'cli-secret-token' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let output = '';
      for await (const chunk of child.stdout) {
        output += String(chunk);
        if (output.includes('\n')) break;
      }
      expect(output).not.toContain('cli-secret-token'); // no secrets in logs
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(output)?.[0];
      expect(url).toBeDefined();
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/admin/config`)).status).toBe(401);
      expect((await fetch(`${url}/admin/config`, { headers: { authorization: 'Bearer cli-secret-token' } })).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      const [code] = await new Promise<[number | null]>((resolve) => child.once('exit', (c) => resolve([c])));
      expect(code).toBe(0);
    }
  });
});
