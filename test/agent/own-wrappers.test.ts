// A module whose models the user already wrapped in RateLimitedLlm (as the README shows)
// reports through serve's /metrics, though its wrapper registered with prom-client's global
// registry; a module building `new Gemini({ model })` needs no provider key to plan or serve
// against the mock; an unreachable provider at serve or agent start is one line and exit 1.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import { mergeLimiterFamilies } from '../../agent/serve/wrapper-metrics.ts';
import { samplesOf, sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { freePort } from '../../loadtest/stack/processes.ts';
import { QUOTASCOPE_BIN } from '../../loadtest/stack/quotascope-bin.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock } from './stack.ts';

const OWN_WRAPPER = fileURLToPath(new URL('../fixtures/agents/own_wrapper.ts', import.meta.url));
const TRIP = fileURLToPath(new URL('../fixtures/agents/trip_planner.ts', import.meta.url));
const KEY_VARIABLES = ['GOOGLE_GENAI_API_KEY', 'GOOGLE_API_KEY', 'GEMINI_API_KEY'];

/** The environment without any provider key. */
function keylessEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const name of KEY_VARIABLES) delete env[name];
  return env;
}

function runBin(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [QUOTASCOPE_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('serve a module with its own wrappers and no provider key', () => {
  let mock: MockProvider;
  let served: ServedAgent;
  const saved = Object.fromEntries([...KEY_VARIABLES, 'GOOGLE_GEMINI_BASE_URL'].map((name) => [name, process.env[name]]));

  beforeAll(async () => {
    mock = await startMockProvider(fastMock(5) as Parameters<typeof startMockProvider>[0], { port: 0 });
    for (const name of KEY_VARIABLES) delete process.env[name];
    // The user's own Gemini reaches the mock the way ADK's does: by the environment.
    process.env.GOOGLE_GEMINI_BASE_URL = mock.url;
    served = await startServe({ agent: OWN_WRAPPER, port: 0, providerUrl: mock.url, httpTimeoutMs: 10_000 });
  });

  afterAll(async () => {
    await served?.close();
    await mock?.close();
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('loads without a key, keeps the wrapper and serves its limiter metrics', async () => {
    expect(served.models).toEqual([
      { agent: 'first', action: 'kept', reason: 'already rate-limited' },
      { agent: 'second', action: 'kept', reason: 'already rate-limited' },
    ]);
    const res = await fetch(`${served.url}/v1/agents/own_wrapper/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ document: 'a short document' }),
    });
    expect(res.status).toBe(200);
    const text = await (await fetch(`${served.url}/metrics`)).text();
    expect(sumOfMetric(text, 'llm_limiter_calls_total', { limiter: 'users-own', outcome: 'ok' })).toBe(2);
    expect(samplesOf(text, 'llm_limiter_permits_limit', { limiter: 'users-own' })[0]?.value).toBe(4);
    // One HELP and TYPE per family: Prometheus rejects a repeated one.
    const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
    expect(new Set(types).size).toBe(types.length);
  });
});

describe('mergeLimiterFamilies', () => {
  it('adds the limiter families of another registry under one header, dropping its other families', () => {
    const own = [
      '# HELP llm_limiter_calls_total Finished calls',
      '# TYPE llm_limiter_calls_total counter',
      'llm_limiter_calls_total{limiter="gemini",agent="a",outcome="ok"} 3',
      '# HELP process_cpu_seconds_total cpu',
      '# TYPE process_cpu_seconds_total counter',
      'process_cpu_seconds_total 1',
    ].join('\n');
    const other = [
      '# HELP llm_limiter_calls_total Finished calls',
      '# TYPE llm_limiter_calls_total counter',
      'llm_limiter_calls_total{limiter="users-own",agent="b",outcome="ok"} 2',
      '# HELP process_cpu_seconds_total cpu',
      '# TYPE process_cpu_seconds_total counter',
      'process_cpu_seconds_total 9',
      '# HELP llm_limiter_waiting_calls waiting',
      '# TYPE llm_limiter_waiting_calls gauge',
      'llm_limiter_waiting_calls{limiter="users-own"} 0',
    ].join('\n');
    const merged = mergeLimiterFamilies(own, [other]);
    expect(merged.match(/# TYPE llm_limiter_calls_total/g)).toHaveLength(1);
    expect(sumOfMetric(merged, 'llm_limiter_calls_total')).toBe(5);
    expect(sumOfMetric(merged, 'process_cpu_seconds_total')).toBe(1);
    expect(merged).toContain('llm_limiter_waiting_calls{limiter="users-own"} 0');
  });
});

describe('start-up without a key, and against an unreachable provider', () => {
  it('plan --agent loads a module that builds new Gemini({ model }) with no key in the environment', async () => {
    const { code, stdout, stderr } = await runBin(['plan', '--agent', OWN_WRAPPER], keylessEnv());
    expect(stderr).not.toContain('API key');
    expect(code).toBe(0);
    expect(stdout).toContain('2 model calls per request');
  });

  it('serve and agent exit 1 with one line naming the provider', async () => {
    const closed = await freePort();
    const url = `http://127.0.0.1:${closed}`;
    for (const args of [
      ['serve', '--agent', TRIP, '--port', '0', '--provider-url', url],
      ['agent', '--port', '0', '--provider-url', url],
    ]) {
      const { code, stderr } = await runBin(args, keylessEnv());
      expect(code, args[0]).toBe(1);
      expect(stderr.trim().split('\n'), args[0]).toHaveLength(1);
      expect(stderr).toMatch(new RegExp(`^${args[0]}: provider http://127\\.0\\.0\\.1:${closed}/ is unreachable \\(ECONNREFUSED, for 10 s\\)`));
    }
  });
});
