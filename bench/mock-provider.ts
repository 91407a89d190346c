// Benchmark: non-streaming requests/s of the mock provider (quotas checked on every request,
// zero latency) against a bare node:http server answering a fixed JSON body of the same size
// (the ceiling on this machine). Each server runs in its own child process, so it has one
// core to itself as far as the OS allows; the load comes from this process over keep-alive
// connections with a fixed concurrency.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import type { BenchModule, BenchRow } from './types.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CONCURRENCY = 32;
const WARMUP_MS = 1_000;
const MEASURE_MS = 4_000;
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

/** Fixed-concurrency closed loop; returns requests/s over the measuring window. */
async function measure(url: string): Promise<{ opsPerSec: number; meanNs: number; requests: number }> {
  const dispatcher = new Agent({ connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 30_000 });
  const target = `${url}/v1beta/models/gemini-2.5-flash:generateContent`;
  const init = {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'bench-key' },
    body: REQUEST_BODY,
    dispatcher,
  };
  let counting = false;
  let stop = false;
  let completed = 0;
  let latencyNs = 0;
  const worker = async () => {
    while (!stop) {
      const started = process.hrtime.bigint();
      const response = await fetch(target, init as RequestInit);
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`unexpected status ${response.status}`);
      if (counting) {
        completed++;
        latencyNs += Number(process.hrtime.bigint() - started);
      }
    }
  };
  const workers = Array.from({ length: CONCURRENCY }, worker);
  await new Promise((resolve) => setTimeout(resolve, WARMUP_MS));
  counting = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
  counting = false;
  const seconds = (performance.now() - started) / 1000;
  stop = true;
  await Promise.all(workers);
  await dispatcher.close();
  return { opsPerSec: completed / seconds, meanNs: latencyNs / completed, requests: completed };
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
  try {
    const body = await sampleResponse(mock.url);
    bare = await startChild(['--input-type=module', '-e', bareServerSource(body)]);
    const bareResult = await measure(bare.url);
    await stopChild(bare.child);
    const mockResult = await measure(mock.url);
    const rows: BenchRow[] = [
      {
        group: GROUP,
        name: 'bare node:http, fixed JSON body (baseline)',
        baseline: true,
        opsPerSec: bareResult.opsPerSec,
        meanNs: bareResult.meanNs,
        extra: { requests: bareResult.requests, concurrency: CONCURRENCY, responseBytes: body.length },
      },
      {
        group: GROUP,
        name: 'mock provider generateContent, sliding-window quotas, zero latency, 800 output tokens',
        baseline: false,
        opsPerSec: mockResult.opsPerSec,
        meanNs: mockResult.meanNs,
        extra: { requests: mockResult.requests, concurrency: CONCURRENCY },
      },
    ];
    return rows;
  } finally {
    if (bare) await stopChild(bare.child);
    await stopChild(mock.child);
  }
};

export default benchMockProvider;

if (import.meta.main) {
  const rows = await benchMockProvider();
  for (const row of rows) console.log(`${row.name}: ${row.opsPerSec.toFixed(0)} req/s, mean ${(row.meanNs! / 1e6).toFixed(2)} ms`);
  console.log(`ratio mock/bare: ${(rows[1].opsPerSec / rows[0].opsPerSec).toFixed(2)}`);
}
