// Every request k6 starts is counted once, by how it ended: served, partial, shed (429
// REQUEST_SHED on the native protocol, `detail: "request shed: …"` on ADK's), failed, or
// unfinished (the run ended first). Real k6 against a small HTTP stand-in for the agent side
// that answers each request in turn with one of those outcomes and counts what it answered:
// this test is about k6's counting, not about what the agent service decides.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVED_DURATION_METRIC } from '../../loadtest/k6/request-status.ts';
import { runK6 } from '../../loadtest/drive/runner.ts';
import { parseScenario } from '../../loadtest/scenario/schema.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';

type Kind = 'served' | 'partial' | 'shed' | 'failed' | 'hang';
const ORDER: Kind[] = ['served', 'partial', 'shed', 'failed', 'hang'];

const dir = mkdtempSync(join(tmpdir(), 'qs-k6-outcomes-'));
let server: Server;
let url: string;
let next = 0;
const answered: Record<Kind, number> = { served: 0, partial: 0, shed: 0, failed: 0, hang: 0 };
const hanging = new Set<import('node:http').ServerResponse>();

const adkEvent = (author: string, errorCode?: string) => ({
  author,
  ...(errorCode ? { errorCode, errorMessage: 'rate limited' } : { content: { role: 'model', parts: [{ text: 'ok' }] } }),
  usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 },
});

beforeAll(async () => {
  requireTool('k6');
  server = createServer((req, res) => {
    req.resume(); // the request body is not read
    req.on('end', () => {
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      if (req.method === 'DELETE') return json(200, {});
      if (req.url?.endsWith('/sessions')) return json(200, { id: `s-${next}` });
      const adk = req.url === '/run';
      const kind = ORDER[next++ % ORDER.length];
      answered[kind]++;
      if (kind === 'hang') {
        hanging.add(res); // never answered before the run ends
        return;
      }
      if (kind === 'shed') {
        const retry = { 'retry-after': '2' };
        return adk
          ? json(429, { detail: 'request shed: the budget cannot fund it within the 60 s request deadline' }, retry)
          : json(429, { error: { code: 'REQUEST_SHED', message: 'request shed', retryAfterSeconds: 2 } }, retry);
      }
      if (kind === 'failed') return json(500, adk ? { detail: 'boom' } : { error: { code: 'INTERNAL', message: 'boom' } });
      if (adk) return json(200, kind === 'served' ? [adkEvent('a'), adkEvent('b')] : [adkEvent('a', 'RATE_LIMITED'), adkEvent('b')]);
      const branches = kind === 'served' ? [{ name: 'a', outcome: 'ok' }, { name: 'b', outcome: 'ok' }] : [{ name: 'a', outcome: 'ok' }, { name: 'b', outcome: 'timeout' }];
      return json(200, { branches, missingBranches: kind === 'served' ? [] : ['b'], permitWaitMs: 1 });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('k6 counts every request it starts', () => {
  for (const protocol of ['native', 'adk'] as const) {
    it(`${protocol}: served, partial, shed, failed and unfinished as the server answered them`, async () => {
      for (const k of ORDER) answered[k] = 0;
      next = 0;
      // 10 starts in 2 s; the run ends 1 s later, while the hanging requests still wait.
      const scenario = parseScenario({
        name: `outcomes-${protocol}`,
        defaults: { tree: 'review', inputTokensPerCall: 200 },
        arrivals: [{ kind: 'constant', start: 0, perMinute: 300, duration: 2 }],
        requestTimeout: 30,
        gracefulStop: 1,
        ...(protocol === 'adk' ? { protocol: 'adk', adk: { app: 'review_app', authors: ['a', 'b'] } } : {}),
      });
      const r = await runK6({ scenario, target: url, reportDir: join(dir, protocol), runId: `outcomes-${protocol}` });
      const o = r.summary?.outcomes;
      expect(o, 'k6 summary').toBeDefined();
      expect(answered.hang, 'some requests hang past the run').toBeGreaterThan(0);
      expect(o).toEqual({ served: answered.served, partial: answered.partial, shed: answered.shed, failed: answered.failed, unfinished: answered.hang });
      // Shed is neither failed nor a missing branch; failed counts only the 500s.
      expect(r.summary?.failedRequests).toBe(answered.failed);
      expect(r.summary?.statusCodes['429']).toBe(answered.shed);
      expect(r.summary?.requests).toBe(answered.served + answered.partial + answered.shed + answered.failed);
      // Served requests' durations apart from the others (a shed request's 429 comes back at once).
      const data = JSON.parse(readFileSync(join(dir, protocol, 'k6-summary.json'), 'utf8'));
      expect(data.metrics[SERVED_DURATION_METRIC]?.values.count ?? 0).toBe(answered.served);
      expect(r.summary?.branchOutcomesByKind?.ok).toBeGreaterThan(0);
    }, 60_000);
  }
});
