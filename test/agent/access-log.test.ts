// The agent's JSON-lines access log feeds loadtest's trace converter: real requests through
// the real service and mock provider, then the converter and the scenario validation from
// loadtest/ on the file it wrote. Arrival times (not finish times) give the trace its
// timing; rejected requests and earlier lines are kept but not replayed; no document,
// user or key ever reaches the log. A file that cannot be opened fails the start (CLI
// exit 2); one that fails later does not stop the service.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AccessLogError } from '../../agent/access-log.ts';
import { parseServiceOptions } from '../../agent/config.ts';
import { parseCliConfig } from '../../cli/agent.ts';
import { startAgentService } from '../../agent/service.ts';
import { loadScenario, parseScenario } from '../../loadtest/scenario/schema.ts';
import { convertAccessLog, toJsonLines, tokensForDocumentChars } from '../../loadtest/scenario/trace-convert.ts';
import { startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, startStack } from './stack.ts';
import { setTimeout as sleep } from 'node:timers/promises';

const CALL_MS = 150;
const API_KEY = 'sekret-key-4711';
const dir = mkdtempSync(join(tmpdir(), 'qs-access-log-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});


describe('access log → trace', () => {
  it('real requests become a trace the loadtest converter and scenario validation accept', async () => {
    const logPath = join(dir, 'access.jsonl');
    const earlier = '{"note":"an earlier run"}';
    writeFileSync(logPath, `${earlier}\n`);
    const document = 'function add(a, b) { return eval(a + b); } // DOCUMENT-TEXT-MARKER';
    const userId = 'user.marker@example';

    // The limiter is told what a call costs (as `start` tells it), so no request waits at the door for a cold start's learner.
    const stack = await startStack(fastMock(CALL_MS), { accessLog: logPath, apiKey: API_KEY, toolDelayMs: 20, expectedTokensPerCall: 2_000, expectedCallMs: CALL_MS });
    const sent: Record<string, number> = {};
    let t0 = 0;
    const send = async (key: string, atMs: number, tree: string, body: unknown) => {
      await sleep(atMs);
      sent[key] = performance.now() - t0;
      return stack.run(tree, body);
    };
    let responses: Awaited<ReturnType<typeof stack.run>>[];
    try {
      t0 = performance.now();
      // `wide` with width 1 runs its 4 branches one after another: it arrives first and
      // finishes after `review`, so its line is written second and only `time` = arrival
      // puts it first in the trace.
      responses = await Promise.all([
        send('wide', 0, 'wide', { document: 'x'.repeat(2_000), branches: 4, width: 1, trafficClass: 'batch' }),
        send('review', 250, 'review', { document, userId }),
        send('tools', 500, 'tools', { document: 'y'.repeat(40), trafficClass: 'batch' }),
        send('invalid', 500, 'review', { document: 'z', width: 0 }),
        send('unknown', 500, 'no-such-tree', { document: 'z' }),
        send('malformed', 500, 'tools', '{"document": "MALFORMED-MARKER'),
      ]);
    } finally {
      await stack.close(); // flushes and closes the log
    }
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 400, 404, 400]);

    const text = readFileSync(logPath, 'utf8');
    for (const secret of ['DOCUMENT-TEXT-MARKER', 'MALFORMED-MARKER', userId, API_KEY, 'userId']) expect(text).not.toContain(secret);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe(earlier); // appended, not truncated
    const records = lines.slice(1).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toHaveLength(6); // one per request, rejected ones included

    const byTree = (tree: string) => records.find((r) => r.tree === tree)!;
    expect(byTree('review')).toMatchObject({
      status: 200,
      documentChars: document.length,
      trafficClass: 'interactive',
      width: null,
      modelCalls: 5,
      missingBranches: [],
    });
    expect(byTree('wide')).toMatchObject({ status: 200, documentChars: 2_000, trafficClass: 'batch', width: 1, branches: 4, modelCalls: 5 });
    expect(byTree('tools')).toMatchObject({ status: 200, trafficClass: 'batch', width: null, missingBranches: [] });
    expect(Object.keys(byTree('review')).sort()).toEqual(
      ['documentChars', 'durationMs', 'missingBranches', 'modelCalls', 'permitWaitMs', 'status', 'time', 'tokens', 'trafficClass', 'tree', 'width'].sort(),
    );
    for (const r of records.filter((r) => r.tree)) {
      expect(new Date(r.time as string).toISOString()).toBe(r.time);
      expect(r.durationMs as number).toBeGreaterThanOrEqual(CALL_MS);
    }
    const rejected = records.filter((r) => r.tree === undefined);
    expect(rejected.map((r) => `${r.status} ${r.path}`).sort()).toEqual([
      '400 /v1/agents/review/run',
      '400 /v1/agents/tools/run',
      '404 /v1/agents/no-such-tree/run',
    ]);
    // Lines are written as requests finish: the slow `wide` is logged after `review`.
    const order = records.filter((r) => r.tree).map((r) => r.tree);
    expect(order.indexOf('wide')).toBeGreaterThan(order.indexOf('review'));

    const trace = convertAccessLog(text, logPath);
    expect(trace.map((r) => [r.tree, r.trafficClass, r.width])).toEqual([
      ['wide', 'batch', 1],
      ['review', 'interactive', undefined],
      ['tools', 'batch', undefined],
    ]);
    expect(trace[1].inputTokensPerCall).toBe(tokensForDocumentChars(document.length));
    expect(trace[0].inputTokensPerCall).toBe(tokensForDocumentChars(2_000));
    // Relative timing: the trace's `at` is each request's logged arrival, relative to the
    // first. Arrival, not finish: `wide` finished last yet comes first, in the send order.
    // (Compared with the logged times, not the client's clock: on a loaded machine the
    // server stamps arrivals a scheduler-dependent while after the client sent them.)
    const arrivalMs = (tree: string) => Date.parse(byTree(tree).time as string);
    expect(trace[0].at).toBe(0);
    for (const [i, key] of (['review', 'tools'] as const).entries()) {
      expect(trace[i + 1].at, key).toBeCloseTo((arrivalMs(key) - arrivalMs('wide')) / 1000, 3);
    }
    expect(sent.review).toBeLessThan(sent.tools);
    expect(trace[1].at).toBeGreaterThan(0);
    expect(trace[2].at).toBeGreaterThan(trace[1].at);

    // A scenario replaying it: inline records, and a trace file loaded from disk.
    expect(parseScenario({ name: 'recorded', arrivals: [{ kind: 'trace', records: trace }] }).arrivals).toHaveLength(1);
    writeFileSync(join(dir, 'recorded.jsonl'), toJsonLines(trace));
    const scenarioPath = join(dir, 'recorded.json');
    writeFileSync(scenarioPath, JSON.stringify({ name: 'recorded', arrivals: [{ kind: 'trace', file: 'recorded.jsonl' }] }));
    const loaded = loadScenario(scenarioPath).arrivals[0];
    expect(loaded.kind === 'trace' && loaded.records).toEqual(trace);
  });

  it('a log that fails while serving reports once on stderr and the service keeps answering', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const stack = await startStack(fastMock(20), { accessLog: '/dev/full' }); // every write: ENOSPC
    try {
      for (let i = 0; i < 2; i++) {
        const { status } = await stack.run('review', { document: 'ok' });
        expect(status).toBe(200);
        await sleep(50); // let the failed write report
      }
      expect((await fetch(`${stack.agent.url}/healthz`)).status).toBe(200);
      const reports = errors.mock.calls.map((c) => String(c[0])).filter((m) => m.includes('access log'));
      expect(reports).toHaveLength(1);
      expect(reports[0]).toMatch(/"\/dev\/full" failed.*ENOSPC/);
    } finally {
      errors.mockRestore();
      await stack.close();
    }
  });
});

describe('access log configuration', () => {
  it('off by default; --access-log over QUOTASCOPE_AGENT_ACCESS_LOG; empty is rejected by name', () => {
    const none = parseCliConfig([], {});
    expect(none !== 'help' && none.service.accessLog).toBeUndefined();
    const fromEnv = parseCliConfig([], { QUOTASCOPE_AGENT_ACCESS_LOG: '/tmp/a.jsonl' });
    expect(fromEnv !== 'help' && fromEnv.service.accessLog).toBe('/tmp/a.jsonl');
    const fromFlag = parseCliConfig(['--access-log', '-'], { QUOTASCOPE_AGENT_ACCESS_LOG: '/tmp/a.jsonl' });
    expect(fromFlag !== 'help' && fromFlag.service.accessLog).toBe('-');
    expect(() => parseServiceOptions({ accessLog: '' })).toThrow(/accessLog/);
  });

  it('a path that cannot be opened fails the start naming it, with nothing left listening', async () => {
    const path = join(dir, 'missing-dir', 'access.jsonl');
    const started = startAgentService({ port: 0, accessLog: path });
    await expect(started).rejects.toThrow(AccessLogError);
    await expect(started).rejects.toThrow(path);
  });

  it('CLI: an unopenable --access-log exits 2 naming the flag, before loading ADK', async () => {
    const child = spawn(process.execPath, ['cli/quotascope.ts', 'agent', '--access-log', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(2);
    expect(stderr).toMatch(/--access-log: cannot open access log .*EISDIR/);
  });

  it('CLI: --access-log - writes pure JSON lines on stdout, status lines on stderr', async () => {
    const mock = await startMockProvider(fastMock(20) as Parameters<typeof startMockProvider>[0], { port: 0 });
    try {
      const child = spawn(
        process.execPath,
        ['cli/quotascope.ts', 'agent', '--port', '0', '--provider-url', mock.url, '--access-log', '-'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d) => {
        stdout += d;
      });
      child.stderr!.on('data', (d) => {
        stderr += d;
      });
      const deadline = Date.now() + 30_000;
      while (!/listening on (\S+)/.test(stderr) && child.exitCode === null && Date.now() < deadline) await sleep(50);
      const url = stderr.match(/listening on (\S+)/)?.[1];
      expect(url, stderr).toBeDefined();
      const res = await fetch(`${url}/v1/agents/review/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ document: 'let x = 1;', trafficClass: 'batch' }),
      });
      expect(res.status).toBe(200);
      while (!stdout.includes('\n') && Date.now() < deadline) await sleep(20);
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      expect(code).toBe(0);
      const trace = convertAccessLog(stdout, 'stdout'); // throws on any non-JSON line
      expect(trace).toEqual([{ at: 0, tree: 'review', trafficClass: 'batch', inputTokensPerCall: tokensForDocumentChars(10) }]);
    } finally {
      await mock.close();
    }
  });
});
