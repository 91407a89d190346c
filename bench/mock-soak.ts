// Benchmark: the mock provider's memory under a long soak. One mock process (its own child)
// answers a steady, low rate of requests from many API keys and models, streamed and not,
// some over quota (429s), with its quota window compressed (MOCK_SOAK_WINDOW_MS) so the soak
// passes more windows than the mock remembers per quota (WINDOWS_KEPT) and every bound it
// keeps is reached. Its resident set size (VmRSS) is sampled all along; the row states the
// bound: RSS at the start and end, its peak, and its growth per minute over the first and the
// second half (a leak keeps growing in the second half; a bounded process levels off).
//
// Length and rate: MOCK_SOAK_MINUTES (default 20) and MOCK_SOAK_RATE requests per second
// (default 40), both from the environment, so a short run fits a quick check.
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild, stopChild } from './support/child-process.ts';
import type { BenchModule } from './types.ts';

const GROUP = 'mock provider: memory under a long soak (requests/s served)';
/** The mock's quota window, ms: 60x compressed, so 20 minutes pass 1,200 windows (more than WINDOWS_KEPT). */
const MOCK_SOAK_WINDOW_MS = 1_000;
const DEFAULT_MINUTES = 20;
const DEFAULT_RATE = 40;
const SAMPLE_MS = 10_000;
/** Distinct API keys; each of the 3 models has its own quota per key (quota scope model). */
const KEYS = 300;
const MODELS = ['gemini-2.5-flash', 'gemini-2.5-pro', 'gemini-2.0-flash'];
const DISTINCT_PROMPTS = 2_048;
/** Per quota window: low enough that the hot key (every HOT_EVERY-th request) draws 429s. */
const TOKENS_PER_WINDOW = 500;
const HOT_EVERY = 5;

const resultsDir = join(dirname(fileURLToPath(import.meta.url)), 'results');

function envNumber(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !(value > 0) || value > max) throw new Error(`${name}: expected a number in (0, ${max}], got ${raw}`);
  return value;
}

/** Resident set size of a process, MB (Linux /proc). */
function rssMb(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!line) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(line[1]) / 1024;
}

/** Least-squares slope of (minute, MB) samples, MB per minute. */
function slopePerMinute(samples: readonly { minute: number; rssMb: number }[]): number {
  const n = samples.length;
  if (n < 2) return 0;
  const mx = samples.reduce((s, p) => s + p.minute, 0) / n;
  const my = samples.reduce((s, p) => s + p.rssMb, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of samples) {
    num += (p.minute - mx) * (p.rssMb - my);
    den += (p.minute - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

function post(agent: Agent, url: URL, key: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length, 'x-goog-api-key': key } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const benchMockSoak: BenchModule = async () => {
  const minutes = envNumber('MOCK_SOAK_MINUTES', DEFAULT_MINUTES, 24 * 60);
  const rate = envNumber('MOCK_SOAK_RATE', DEFAULT_RATE, 1_000);
  const mock = await startChild([
    'cli/quotascope.ts',
    'mock-provider',
    '--port=0',
    `--quota-window-ms=${MOCK_SOAK_WINDOW_MS}`,
    '--requests-per-minute=1000',
    `--tokens-per-minute=${TOKENS_PER_WINDOW}`,
    '--ttft=fixed:0',
    '--per-token-ms=fixed:0',
    '--output-tokens=uniform:20,120',
  ]);
  const pid = mock.child.pid!;
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const bodies = Array.from({ length: DISTINCT_PROMPTS }, (_, i) =>
    Buffer.from(JSON.stringify({ contents: [{ role: 'user', parts: [{ text: `Note ${i}. ${'Summarise this note. '.repeat(5 + (i % 40))}` }] }] })),
  );
  const statuses = new Map<number, number>();
  const samples: { minute: number; rssMb: number }[] = [];
  let sent = 0;
  let failed = 0;
  try {
    const started = performance.now();
    const endAt = started + minutes * 60_000;
    let nextSample = started;
    const inFlight = new Set<Promise<void>>();
    for (let i = 0; performance.now() < endAt; i++) {
      const now = performance.now();
      if (now >= nextSample) {
        samples.push({ minute: (now - started) / 60_000, rssMb: rssMb(pid) });
        nextSample += SAMPLE_MS;
      }
      const model = i % HOT_EVERY === 0 ? MODELS[0] : MODELS[i % MODELS.length];
      const method = i % 4 === 0 ? 'streamGenerateContent?alt=sse' : 'generateContent';
      const url = new URL(`${mock.url}/v1beta/models/${model}:${method}`);
      const call = post(agent, url, i % HOT_EVERY === 0 ? 'soak-hot-key' : `soak-key-${(i * 7919) % KEYS}`, bodies[i % DISTINCT_PROMPTS]).then(
        (status) => void statuses.set(status, (statuses.get(status) ?? 0) + 1),
        () => void failed++,
      );
      sent++;
      const tracked = call.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
      // Open loop at `rate`, but never more than 16 at once: a slow machine sends less, not a pile.
      if (inFlight.size >= 16) await Promise.race(inFlight);
      const due = started + ((i + 1) * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    await Promise.all(inFlight);
    samples.push({ minute: (performance.now() - started) / 60_000, rssMb: rssMb(pid) });
    const seconds = (performance.now() - started) / 1000;
    const half = samples.at(-1)!.minute / 2;
    const first = samples.filter((s) => s.minute <= half);
    const second = samples.filter((s) => s.minute >= half);
    const peak = Math.max(...samples.map((s) => s.rssMb));
    await mkdir(resultsDir, { recursive: true });
    await writeFile(join(resultsDir, 'mock-soak.json'), `${JSON.stringify({ minutes, rate, sent, failed, statuses: Object.fromEntries(statuses), samples }, null, 2)}\n`);
    return [
      {
        group: GROUP,
        name: `mock provider, ${minutes} min at ${rate} req/s, ${KEYS} keys x ${MODELS.length} models, ${MOCK_SOAK_WINDOW_MS} ms quota window`,
        baseline: true,
        opsPerSec: sent / seconds,
        extra: {
          requests: sent,
          failed,
          ok: statuses.get(200) ?? 0,
          rateLimited: statuses.get(429) ?? 0,
          rssStartMb: Number(samples[0].rssMb.toFixed(1)),
          rssEndMb: Number(samples.at(-1)!.rssMb.toFixed(1)),
          rssPeakMb: Number(peak.toFixed(1)),
          growthFirstHalfMbPerMin: Number(slopePerMinute(first).toFixed(3)),
          growthSecondHalfMbPerMin: Number(slopePerMinute(second).toFixed(3)),
        },
      },
    ];
  } finally {
    agent.destroy();
    await stopChild(mock.child);
  }
};

export default benchMockSoak;
