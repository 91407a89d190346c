// Benchmark: non-streaming requests/s of the mock provider (quotas checked on every request,
// zero latency) against a bare node:http server answering a fixed JSON body of the same size
// (the ceiling on this machine). Each server runs in its own child process, so it has one
// core to itself as far as the OS allows; the load comes from this process over keep-alive
// connections (node:http client) with a fixed concurrency.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchModule, BenchRow } from './types.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CONCURRENCY = 32;
const WARMUP_MS = 500;
const MEASURE_MS = 3_000;
/** Alternating rounds; each server's best round is reported (the machine is shared, so noise only lowers a round). */
const ROUNDS = 3;
const GROUP = 'mock provider: non-streaming requests/s (server on one core)';
const REQUEST_BODY = JSON.stringify({
  contents: [{ role: 'user', parts: [{ text: 'Review this document. '.repeat(200) }] }],
  systemInstruction: { parts: [{ text: 'You are a careful reviewer.' }] },
});

/** Starts a server script in a child process and returns its base URL (it prints one line with the URL). */
async function startChild(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  for await (const chunk of child.stdout!) {
    output += String(chunk);
    const match = /http:\/\/[\d.]+:\d+/.exec(output);
    if (match) return { url: match[0], child };
  }
  throw new Error(`server exited before printing its URL: ${output}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

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
  const body = Buffer.from(REQUEST_BODY);
  let counting = false;
  let stop = false;
  let completed = 0;
  let latencyNs = 0;
  const worker = async () => {
    while (!stop) {
      const started = process.hrtime.bigint();
      const status = await post(agent, target, body);
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

interface Measurement {
  opsPerSec: number;
  meanNs: number;
  requests: number;
  /** Requests served per CPU second of the server process. */
  perCpuSecond: number;
}

/** The mock's answer for REQUEST_BODY, so the bare server sends a body of the same size. */
async function sampleResponse(url: string): Promise<string> {
  const response = await fetch(`${url}/v1beta/models/gemini-2.5-flash:generateContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'sample-key' },
    body: REQUEST_BODY,
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
    'mock-provider/cli.ts',
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
    const best = (rounds: typeof bareRounds) => rounds.reduce((a, b) => (b.opsPerSec > a.opsPerSec ? b : a));
    const rounds = (list: typeof bareRounds) => list.map((r) => r.opsPerSec.toFixed(0)).join(' ');
    const bareResult = best(bareRounds);
    const mockResult = best(mockRounds);
    const expressResult = best(expressRounds);
    const rows: BenchRow[] = [
      {
        group: GROUP,
        name: 'bare node:http, fixed JSON body (baseline)',
        baseline: true,
        opsPerSec: bareResult.opsPerSec,
        meanNs: bareResult.meanNs,
        extra: { requests: bareResult.requests, concurrency: CONCURRENCY, responseBytes: body.length, rounds: rounds(bareRounds), requestsPerCpuSecond: Math.round(bareResult.perCpuSecond) },
      },
      {
        group: GROUP,
        name: 'express 5, one route, fixed JSON body (the framework alone)',
        baseline: false,
        opsPerSec: expressResult.opsPerSec,
        meanNs: expressResult.meanNs,
        extra: { requests: expressResult.requests, concurrency: CONCURRENCY, rounds: rounds(expressRounds), requestsPerCpuSecond: Math.round(expressResult.perCpuSecond) },
      },
      {
        group: GROUP,
        name: 'mock provider generateContent, sliding-window quotas, zero latency, 800 output tokens',
        baseline: false,
        opsPerSec: mockResult.opsPerSec,
        meanNs: mockResult.meanNs,
        extra: { requests: mockResult.requests, concurrency: CONCURRENCY, rounds: rounds(mockRounds), requestsPerCpuSecond: Math.round(mockResult.perCpuSecond) },
      },
    ];
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
  for (const row of rows) {
    console.log(
      `${row.name}: ${row.opsPerSec.toFixed(0)} req/s, mean ${(row.meanNs! / 1e6).toFixed(2)} ms (rounds: ${row.extra?.rounds}); ` +
        `${row.extra?.requestsPerCpuSecond} requests per server CPU second`,
    );
  }
  for (const row of rows.slice(1)) {
    const wall = row.opsPerSec / rows[0].opsPerSec;
    const cpu = Number(row.extra?.requestsPerCpuSecond) / Number(rows[0].extra?.requestsPerCpuSecond);
    console.log(`ratio ${row.name} / bare: ${wall.toFixed(2)} wall clock, ${cpu.toFixed(2)} per server CPU second`);
  }
}
