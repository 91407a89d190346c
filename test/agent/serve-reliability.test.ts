// What a red team sent to `serve` (issue 23's table), each answered as a user would expect:
// sessions are bounded (count and idle expiry, the oldest idle evicted first, counted), a
// client's mistake is a 400 naming the field and stores nothing, and a module that hangs,
// overflows or exits at import is one line naming it with a non-zero exit.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, metricsText } from './stack.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/agents/${name}`, import.meta.url));
const BIN = fileURLToPath(new URL('../../cli/quotascope.ts', import.meta.url));

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** `{"a":{"a":…{}}}` nested `depth` deep, as JSON text (a 3,000-deep one is about 6 KB per level pair). */
const nested = (depth: number) => `${'{"a":'.repeat(depth)}{}${'}'.repeat(depth)}`;

/** The bin as a user runs it: exit code and output, the process killed if it outlives `timeoutMs`. */
function runBin(args: string[], timeoutMs = 60_000): Promise<{ code: number | null; out: string; err: string; killed: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c;
    });
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err, killed });
    });
  });
}

describe('serve: sessions are bounded and bad state is refused before it is stored', () => {
  let mock: MockProvider;
  let served: ServedAgent;
  const app = 'loop_tools';

  beforeAll(async () => {
    mock = await startMockProvider(fastMock(5) as Parameters<typeof startMockProvider>[0], { port: 0 });
    served = await startServe({ agent: fixture('loop_tools.ts'), port: 0, providerUrl: mock.url, maxSessions: 4 });
  });
  afterAll(async () => {
    await served?.close();
    await mock?.close();
  });

  it('a body that is not JSON is refused with 415, on every POST route', async () => {
    const plain = (url: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'document=x' });
    for (const path of [`/v1/agents/${app}/run`, '/run', '/run_sse', `/apps/${app}/users/u/sessions`]) {
      const res = await plain(`${served.url}${path}`);
      expect(res.status, path).toBe(415);
      expect(((await res.json()) as { error: string }).error).toBe('content-type must be application/json (got "text/plain")');
    }
  });

  const sessions = (user: string) => `${served.url}/apps/${app}/users/${user}/sessions`;

  it('row 2: sessions never deleted are capped at --max-sessions; the oldest idle goes first, counted', async () => {
    const create = async () => ((await (await post(sessions('abandoner'), {})).json()) as { id: string }).id;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await create());
    // Read the first one: it is no longer the oldest idle.
    expect((await fetch(`${sessions('abandoner')}/${ids[0]}`)).status).toBe(200);
    for (let i = 0; i < 3; i++) ids.push(await create());
    const listed = (await (await fetch(sessions('abandoner'))).json()) as { sessions: { id: string }[] };
    expect(listed.sessions.map((s) => s.id).sort()).toEqual([ids[0], ids[4], ids[5], ids[6]].sort());
    for (const gone of [ids[1], ids[2], ids[3]]) expect((await fetch(`${sessions('abandoner')}/${gone}`)).status).toBe(404);
    const metrics = await metricsText(served.url);
    expect(sumOfMetric(metrics, 'agent_sessions_evicted_total', { reason: 'capacity' })).toBe(3);
    expect(sumOfMetric(metrics, 'agent_sessions_stored')).toBe(4);
  });

  it('row 3: state nested 3,000 deep is a 400 naming state, and no session is stored', async () => {
    const before = sumOfMetric(await metricsText(served.url), 'agent_sessions_stored');
    const deep = await post(sessions('deep'), `{"state":${nested(3000)}}`);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: string }).error).toMatch(/^invalid request: state: nested deeper than \d+ levels/);
    const named = await post(`${sessions('deep')}/deep_one`, `{"state":${nested(3000)}}`);
    expect(named.status).toBe(400);
    expect((await fetch(`${sessions('deep')}/deep_one`)).status).toBe(404);
    expect(((await (await fetch(sessions('deep'))).json()) as { sessions: unknown[] }).sessions).toEqual([]);
    const big = await post(sessions('deep'), { state: { blob: 'x'.repeat(100_000) } });
    expect(big.status).toBe(400);
    expect(((await big.json()) as { error: string }).error).toMatch(/^invalid request: state: larger than \d+ bytes/);
    expect(sumOfMetric(await metricsText(served.url), 'agent_sessions_stored')).toBe(before);
  });

  it("row 4: a functionResponse part or a stateDelta nested 10,000 deep is a 400 naming the field, in ADK's error shape", async () => {
    const session = ((await (await post(sessions('mistaken'), {})).json()) as { id: string }).id;
    const run = { appName: app, userId: 'mistaken', sessionId: session };
    const calls = sumOfMetric(await metricsText(mock.url), 'mock_provider_requests_total');
    for (const route of ['/run', '/run_sse']) {
      const orphan = await post(`${served.url}${route}`, { ...run, newMessage: { parts: [{ functionResponse: { id: 'call-1', name: 'lookup', response: {} } }] } });
      expect(orphan.status, route).toBe(400);
      const body = (await orphan.json()) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['error']);
      expect(body.error).toMatch(/^invalid request: newMessage\.parts\.0\.functionResponse: /);
      const deep = await post(`${served.url}${route}`, `${JSON.stringify({ ...run, newMessage: { parts: [{ text: 'x' }] } }).slice(0, -1)},"stateDelta":${nested(10_000)}}`);
      expect(deep.status, route).toBe(400);
      expect(((await deep.json()) as { error: string }).error).toMatch(/^invalid request: stateDelta: nested deeper than \d+ levels/);
    }
    expect(sumOfMetric(await metricsText(mock.url), 'mock_provider_requests_total')).toBe(calls);
    // The session is untouched and still answers.
    const stored = await fetch(`${sessions('mistaken')}/${session}`);
    expect(stored.status).toBe(200);
    expect(((await stored.json()) as { events: unknown[] }).events).toEqual([]);
  });
  it("app: and user: state a client brings is bounded too: a delta past the limit is a 400, and user: state goes with the user's last session", async () => {
    const user = 'stateful';
    const create = async () => ((await (await post(sessions(user), {})).json()) as { id: string }).id;
    const run = (sessionId: string, stateDelta: Record<string, unknown>) =>
      post(`${served.url}/run`, { appName: app, userId: user, sessionId, newMessage: { parts: [{ text: 'x' }] }, stateDelta });
    const first = await create();
    const ran = await run(first, { 'user:profile': 'p'.repeat(1_000) });
    expect(ran.status).toBe(200);
    await ran.arrayBuffer();
    const second = await create();
    const state = async (id: string) => ((await (await fetch(`${sessions(user)}/${id}`)).json()) as { state: Record<string, unknown> }).state;
    expect(await state(second)).toHaveProperty('user:profile');
    // Each delta fits, but the session's state with it would not.
    const tooMuch = await run(second, { 'app:notes': 'n'.repeat(32_500), 'user:more': 'm'.repeat(32_500) });
    expect(tooMuch.status).toBe(400);
    expect(((await tooMuch.json()) as { error: string }).error).toMatch(/^invalid request: stateDelta: the session's state .* would be \d+ bytes, over 65536/);
    expect(await state(second)).not.toHaveProperty('user:more');
    for (const id of [first, second]) expect((await fetch(`${sessions(user)}/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await state(await create())).not.toHaveProperty('user:profile');
  });
});

describe('serve: session idle expiry', () => {
  it('a session idle longer than --session-idle-ms is gone and counted; one in use stays', async () => {
    const served = await startServe({ agent: fixture('loop_tools.ts'), port: 0, sessionIdleMs: 1_000, wrap: false });
    try {
      const base = `${served.url}/apps/loop_tools/users/u/sessions`;
      const idle = ((await (await post(base, {})).json()) as { id: string }).id;
      const used = ((await (await post(base, {})).json()) as { id: string }).id;
      // Poll the used one (each read is a use) until the idle one has expired.
      let idleStatus = 200;
      for (let i = 0; i < 100 && idleStatus === 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        expect((await fetch(`${base}/${used}`)).status).toBe(200);
        const list = (await (await fetch(base)).json()) as { sessions: { id: string }[] };
        idleStatus = list.sessions.some((s) => s.id === idle) ? 200 : 404;
      }
      expect(idleStatus).toBe(404);
      expect((await fetch(`${base}/${idle}`)).status).toBe(404);
      expect((await fetch(`${base}/${used}`)).status).toBe(200);
      expect(sumOfMetric(await metricsText(served.url), 'agent_sessions_evicted_total', { reason: 'idle' })).toBe(1);
    } finally {
      await served.close();
    }
  });
});

describe('serve: a module that hangs, overflows or exits at import', () => {
  const expectOneLine = (result: { code: number | null; err: string; out: string; killed: boolean }, module: string, what: RegExp) => {
    expect(result.killed).toBe(false);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    const lines = result.err.trim().split('\n');
    expect(lines, result.err).toHaveLength(1);
    expect(lines[0]).toContain(fixture(module));
    expect(lines[0]).toMatch(what);
    expect(result.out).toBe('');
  };

  it('row 5: a top-level await that never settles (with a live timer, and without) ends at --import-timeout-ms, naming the module', async () => {
    const [live, idle] = await Promise.all([
      runBin(['serve', '--agent', fixture('never_ready.ts'), '--port', '0', '--import-timeout-ms', '1000']),
      runBin(['serve', '--agent', fixture('never_ready_idle.ts'), '--port', '0', '--import-timeout-ms', '1000']),
    ]);
    expectOneLine(live, 'never_ready.ts', /import did not finish within 1000 ms/);
    expectOneLine(idle, 'never_ready_idle.ts', /import did not finish within 1000 ms/);
  }, 120_000);

  it('row 5: a tree 3,000 deep, and a stack overflow at import, name the module', async () => {
    const [deep, overflow] = await Promise.all([
      runBin(['serve', '--agent', fixture('deep_tree.ts'), '--port', '0']),
      runBin(['serve', '--agent', fixture('overflows_at_import.ts'), '--port', '0']),
    ]);
    expectOneLine(deep, 'deep_tree.ts', /nested deeper than \d+ levels/);
    expectOneLine(overflow, 'overflows_at_import.ts', /import failed: Maximum call stack size exceeded/);
  }, 120_000);

  it('row 9: process.exit(0) at import is a failure naming the module, not a silent exit 0', async () => {
    expectOneLine(await runBin(['serve', '--agent', fixture('exits_at_import.ts'), '--port', '0']), 'exits_at_import.ts', /called process\.exit\(0\) while being imported/);
  }, 120_000);
});

describe('serve and agent: a provider URL with credentials is redacted in what they print', () => {
  it('row 8: neither the start line nor the unreachable-provider line shows the user or the password', async () => {
    // Nothing listens on port 9: each starts, then says in one line that the provider is unreachable and exits 1.
    const providerUrl = 'http://alice:s3cret@127.0.0.1:9/';
    const run = (args: string[]) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, [BIN, ...args, '--port', '0', '--provider-url', providerUrl], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`no start line: ${out}`));
        }, 90_000);
        child.stdout.on('data', (c: Buffer) => {
          out += c;
          if (out.includes('\n')) {
            clearTimeout(timer);
            child.kill('SIGTERM');
            resolve(out);
          }
        });
        child.stderr.on('data', (c: Buffer) => {
          out += c;
        });
        child.on('exit', () => {
          clearTimeout(timer);
          resolve(out);
        });
      });
    const [serveOut, agentOut] = await Promise.all([run(['serve', '--agent', fixture('loop_tools.ts')]), run(['agent'])]);
    for (const out of [serveOut, agentOut]) {
      expect(out).toContain('127.0.0.1:9');
      expect(out).not.toContain('s3cret');
      expect(out).not.toContain('alice');
    }
  }, 120_000);
});
