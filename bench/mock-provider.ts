// Benchmark: non-streaming requests/s of the mock provider (quotas checked on every request,
// zero latency) against a bare node:http server answering a fixed JSON body of the same size
// as the mock's reply (the ceiling on this machine). Each server runs in its own child
// process, so it has one core to itself as far as the OS allows; the load comes from this
// process over keep-alive connections (node:http client) with a fixed concurrency. Two groups:
// requests per second of wall clock and requests per server CPU second (the rate one core
// would give). Both report each server's best round: contention on a shared machine only
// lowers a round (fewer requests, and more CPU per request from cache misses).
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { startChild, stopChild } from './support/child-process.ts';
import type { BenchModule, BenchRow } from './types.ts';

const CONCURRENCY = 32;
const WARMUP_MS = 500;
const MEASURE_MS = 2_000;
/** Alternating rounds (bare, express, mock, bare, ...); every round is in the JSON output. */
const ROUNDS = 5;
const WALL_GROUP = 'mock provider: non-streaming requests/s (server on one core)';
const CPU_GROUP = 'mock provider: non-streaming requests per server CPU second';
/**
 * 4.4 KB requests, all different: more distinct prompts than the mock's cache of recent
 * texts holds, so every answer is generated (the cost a load test with varied documents pays).
 */
const DISTINCT_PROMPTS = 1024;
const requestBody = (i: number) =>
  JSON.stringify({
    contents: [{ role: 'user', parts: [{ text: `Document ${String(i).padStart(4, '0')}. ${'Review this document. '.repeat(200)}` }] }],
    systemInstruction: { parts: [{ text: 'You are a careful reviewer.' }] },
  });

/**
 * CPU seconds (user + system) a process has used, from /proc (Linux). On a shared machine
 * requests per server CPU second is the steadier figure: it is the rate one core would give.
 */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** One POST over a keep-alive agent; resolves with the status once the body is read. */
function post(agent: Agent, url: URL, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length, 'x-goog-api-key': 'bench-key' } },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Fixed-concurrency closed loop; returns requests/s over the measuring window. */
async function measure(url: string, pid: number): Promise<Measurement> {
  // node:http's client costs less CPU per request than fetch, so the generator is less of a limit.
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const target = new URL(`${url}/v1beta/models/gemini-2.5-flash:generateContent`);
  const bodies = Array.from({ length: DISTINCT_PROMPTS }, (_, i) => Buffer.from(requestBody(i)));
  let next = 0;
  let counting = false;
  let stop = false;
  let completed = 0;
  let latencyNs = 0;
  const worker = async () => {
    while (!stop) {
      const started = process.hrtime.bigint();
      const status = await post(agent, target, bodies[next++ % DISTINCT_PROMPTS]);
      if (status !== 200) throw new Error(`unexpected status ${status}`);
      if (counting) {
        completed++;
        latencyNs += Number(process.hrtime.bigint() - started);
      }
    }
  };
  const workers = Array.from({ length: CONCURRENCY }, worker);
  await new Promise((resolve) => setTimeout(resolve, WARMUP_MS));
  counting = true;
  const cpuStart = cpuSeconds(pid);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
  counting = false;
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(pid) - cpuStart;
  stop = true;
  await Promise.all(workers);
  agent.destroy();
  return { opsPerSec: completed / seconds, meanNs: latencyNs / completed, requests: completed, perCpuSecond: completed / cpu };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

interface Measurement {
  opsPerSec: number;
  meanNs: number;
  requests: number;
  /** Requests served per CPU second of the server process. */
  perCpuSecond: number;
}

/** The mock's answer to one bench request, so the bare server sends a body of the same size. */
async function sampleResponse(url: string): Promise<string> {
  const response = await fetch(`${url}/v1beta/models/gemini-2.5-flash:generateContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'sample-key' },
    body: requestBody(0),
  });
  return response.text();
}

const bareServerSource = (body: string) => `
import { createServer } from 'node:http';
const body = Buffer.from(${JSON.stringify(body)});
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () => console.log('http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => process.exit(0));
`;

// The framework's share: express 5 with one route answering the same fixed body.
const expressServerSource = (body: string) => `
import express from 'express';
const body = Buffer.from(${JSON.stringify(body)});
const app = express();
app.post('/:version/models/:target', (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
});
const server = app.listen(0, '127.0.0.1', () => console.log('http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => process.exit(0));
`;

const benchMockProvider: BenchModule = async () => {
  const mock = await startChild([
    'cli/quotascope.ts',
    'mock-provider',
    '--port=0',
    '--requests-per-minute=100000000',
    '--tokens-per-minute=2000000000',
    '--quota-window=sliding',
    '--ttft=fixed:0',
    '--per-token-ms=fixed:0',
    '--output-tokens=fixed:800',
  ]);
  let bare: { url: string; child: ChildProcess } | undefined;
  let plainExpress: { url: string; child: ChildProcess } | undefined;
  try {
    const body = await sampleResponse(mock.url);
    bare = await startChild(['--input-type=module', '-e', bareServerSource(body)]);
    plainExpress = await startChild(['--input-type=module', '-e', expressServerSource(body)]);
    const bareRounds: Measurement[] = [];
    const mockRounds: Measurement[] = [];
    const expressRounds: Measurement[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bareRounds.push(await measure(bare.url, bare.child.pid!));
      expressRounds.push(await measure(plainExpress.url, plainExpress.child.pid!));
      mockRounds.push(await measure(mock.url, mock.child.pid!));
    }
    const servers: { name: string; rounds: Measurement[]; baseline: boolean }[] = [
      { name: `bare node:http, fixed ${body.length}-byte JSON body (baseline)`, rounds: bareRounds, baseline: true },
      { name: 'express 5, one route, same fixed body (the framework alone)', rounds: expressRounds, baseline: false },
      { name: 'mock provider generateContent, sliding-window quotas, zero latency, 800 output tokens', rounds: mockRounds, baseline: false },
    ];
    const rows: BenchRow[] = [];
    for (const server of servers) {
      const best = server.rounds.reduce((a, b) => (b.opsPerSec > a.opsPerSec ? b : a));
      rows.push({
        group: WALL_GROUP,
        name: server.name,
        baseline: server.baseline,
        opsPerSec: best.opsPerSec,
        meanNs: best.meanNs,
        extra: {
          requests: best.requests,
          concurrency: CONCURRENCY,
          responseBytes: body.length,
          rounds: server.rounds.map((r) => r.opsPerSec.toFixed(0)).join(' '),
          medianOpsPerSec: Math.round(median(server.rounds.map((r) => r.opsPerSec))),
        },
      });
    }
    for (const server of servers) {
      const perCpu = server.rounds.map((r) => r.perCpuSecond);
      rows.push({
        group: CPU_GROUP,
        name: server.name,
        baseline: server.baseline,
        opsPerSec: Math.max(...perCpu),
        meanNs: 1e9 / Math.max(...perCpu), // server CPU time per request
        extra: { rounds: perCpu.map((x) => x.toFixed(0)).join(' '), median: Math.round(median(perCpu)) },
      });
    }
    return rows;
  } finally {
    if (bare) await stopChild(bare.child);
    if (plainExpress) await stopChild(plainExpress.child);
    await stopChild(mock.child);
  }
};

export default benchMockProvider;

if (import.meta.main) {
  const rows = await benchMockProvider();
  for (const group of [WALL_GROUP, CPU_GROUP]) {
    console.log(group);
    const inGroup = rows.filter((row) => row.group === group);
    const baseline = inGroup.find((row) => row.baseline)!;
    for (const row of inGroup) {
      const figure = group === CPU_GROUP ? `${row.opsPerSec.toFixed(0)} req/CPU-s (${(row.meanNs! / 1000).toFixed(0)} µs CPU/req)` : `${row.opsPerSec.toFixed(0)} req/s`;
      console.log(`  ${row.name}: ${figure}, ratio ${(row.opsPerSec / baseline.opsPerSec).toFixed(2)}; rounds: ${row.extra?.rounds}`);
    }
  }
}
