// Benchmark of the rate-limited wrapper's overhead per uncontended call: a delegate that
// answers at once, called directly (baseline), through RateLimitedLlm (semaphore, token
// budget, prom-client metrics, no-op OTel), and through p-limit and bottleneck configured
// for the same concurrency. A limiter's added cost per call is its time minus the direct
// call's, measured in the same round.
//
// Made to be stable on a shared, loaded machine:
//  - each sample is a batch of sequential calls (a single call is below the timer's
//    resolution and overhead), reported as time per call;
//  - the tasks run in several interleaved rounds (A B C D, A B C D, …), so a change of load
//    hits every task alike, and the added cost is the difference within a round;
//  - the median (robust to descheduled samples) is reported beside the mean (throughput).
import { BaseLlm, type BaseLlmConnection, type LlmRequest, type LlmResponse } from '@google/adk';
import Bottleneck from 'bottleneck';
import pLimit from 'p-limit';
import { Registry } from 'prom-client';
import { Bench } from 'tinybench';
import { RateLimitedLlm, TokenBudget } from '../instrumentation/index.ts';
import type { BenchModule, BenchRow } from './types.ts';

const group = 'instrumentation: overhead per uncontended model call';
const CONCURRENCY = 10;
const ROUNDS = 7;
const ROUND_MS = 150;
const WARMUP_MS = 60;
/** The target for the wrapper's added cost per call. */
const TARGET_ADDED_NS = 20_000;

const response: LlmResponse = {
  content: { role: 'model', parts: [{ text: 'ok' }] },
  usageMetadata: { promptTokenCount: 60, candidatesTokenCount: 40, totalTokenCount: 100 },
};

/** A model that answers immediately: the cost measured is the limiter's alone. */
class InstantLlm extends BaseLlm {
  constructor() {
    super({ model: 'instant' });
  }
  async *generateContentAsync(_request: LlmRequest): AsyncGenerator<LlmResponse, void> {
    yield response;
  }
  connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error('not supported'));
  }
}

const request = {
  contents: [{ role: 'user', parts: [{ text: 'review this document' }] }],
  config: { labels: { adk_agent_name: 'reviewer_1' } },
  toolsDict: {},
  liveConnectConfig: {},
} as unknown as LlmRequest;

async function drain(gen: AsyncGenerator<LlmResponse, void>): Promise<number> {
  let n = 0;
  for await (const r of gen) n += r.usageMetadata?.totalTokenCount ?? 0;
  return n;
}

interface Subject {
  readonly name: string;
  /** Sequential calls per sample. */
  readonly batch: number;
  readonly call: () => Promise<number>;
}

/** Per-call times (ns) of every sample of one subject, and its median in each round. */
interface Measured {
  readonly subject: Subject;
  readonly samplesNs: number[];
  readonly roundMediansNs: number[];
  calls: number;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
}

const median = (values: readonly number[]) => quantile([...values].sort((a, b) => a - b), 0.5);
const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const us = (ns: number) => `${(ns / 1000).toFixed(2)} µs`;

async function measure(subjects: readonly Subject[]): Promise<Measured[]> {
  const measured = subjects.map((subject): Measured => ({ subject, samplesNs: [], roundMediansNs: [], calls: 0 }));
  let sink = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // Low minimum iteration counts: the time budget governs (bottleneck's samples are slow).
    const bench = new Bench({
      time: ROUND_MS,
      warmupTime: WARMUP_MS,
      iterations: 10,
      warmupIterations: 4,
      retainSamples: true,
      throws: true,
    });
    for (const m of measured) {
      const { batch, call } = m.subject;
      bench.add(m.subject.name, async () => {
        const started = bench.now();
        for (let i = 0; i < batch; i++) sink += await call();
        const elapsed = bench.now() - started;
        m.calls += batch;
        return { overriddenDuration: elapsed / batch, overriddenIterationCost: elapsed };
      });
    }
    await bench.run();
    for (const [i, task] of bench.tasks.entries()) {
      const result = task.result;
      if (result.state !== 'completed') throw new Error(`bench task '${task.name}' ended ${result.state}`);
      const samples = (result.latency.samples ?? []).map((ms) => ms * 1e6);
      if (samples.length === 0) throw new Error(`bench task '${task.name}' kept no samples`);
      measured[i].samplesNs.push(...samples);
      measured[i].roundMediansNs.push(median(samples));
    }
  }
  if (sink === 0) throw new Error('instrumentation bench computed nothing');
  return measured;
}

function row(m: Measured, base: Measured | undefined): BenchRow {
  const sorted = [...m.samplesNs].sort((a, b) => a - b);
  const meanNs = mean(sorted);
  const extra: Record<string, number | string> = {
    p50Ns: Math.round(quantile(sorted, 0.5)),
    p99Ns: Math.round(quantile(sorted, 0.99)),
    roundP50RangeNs: `${Math.round(Math.min(...m.roundMediansNs))}..${Math.round(Math.max(...m.roundMediansNs))}`,
    samples: sorted.length,
    callsPerSample: m.subject.batch,
    calls: m.calls,
    rounds: ROUNDS,
  };
  if (base) {
    // Paired within each round: the load of that round cancels out.
    const addedP50 = m.roundMediansNs.map((v, r) => v - base.roundMediansNs[r]);
    extra.addedP50Ns = Math.round(median(addedP50));
    extra.addedP50RangeNs = `${Math.round(Math.min(...addedP50))}..${Math.round(Math.max(...addedP50))}`;
    extra.addedMeanNs = Math.round(meanNs - mean(base.samplesNs));
  }
  return { group, name: m.subject.name, baseline: base === undefined, opsPerSec: 1e9 / meanNs, meanNs, extra };
}

const benchInstrumentation: BenchModule = async () => {
  const delegate = new InstantLlm();
  const wrapper = new RateLimitedLlm({
    delegate,
    name: 'bench',
    maxConcurrent: CONCURRENCY,
    // Large enough that the budget never makes a call wait during the run.
    budget: new TokenBudget(1e12),
    estimatedTokens: 100,
    registry: new Registry(),
  });
  const limit = pLimit(CONCURRENCY);
  const bottleneck = new Bottleneck({ maxConcurrent: CONCURRENCY });
  const subjects: Subject[] = [
    { name: 'delegate called directly', batch: 100, call: () => drain(delegate.generateContentAsync(request)) },
    {
      name: 'through RateLimitedLlm (permit + budget + metrics)',
      batch: 100,
      call: () => drain(wrapper.generateContentAsync(request)),
    },
    { name: `through p-limit(${CONCURRENCY})`, batch: 100, call: () => limit(() => drain(delegate.generateContentAsync(request))) },
    {
      // Bottleneck schedules every job through timers: fewer calls per sample keep the round short.
      name: `through bottleneck({ maxConcurrent: ${CONCURRENCY} })`,
      batch: 5,
      call: () => bottleneck.schedule(() => drain(delegate.generateContentAsync(request))),
    },
  ];
  let measured: Measured[];
  try {
    measured = await measure(subjects);
  } finally {
    wrapper.close();
    await bottleneck.stop({ dropWaitingJobs: false });
  }
  const [direct, ...others] = measured;
  const rows = [row(direct, undefined), ...others.map((m) => row(m, direct))];

  // The comparison, side by side: added cost per call against the direct call.
  const added = (i: number) => Number(rows[i].extra?.addedP50Ns);
  const wrapperAdded = added(1);
  const pLimitAdded = added(2);
  const verdict =
    wrapperAdded < TARGET_ADDED_NS
      ? `under ${us(TARGET_ADDED_NS)}: yes; no more than p-limit's: ${wrapperAdded <= pLimitAdded ? 'yes' : 'no'}`
      : `under ${us(TARGET_ADDED_NS)}: NO`;
  process.stderr.write(
    `[bench] instrumentation: added cost per call (median over ${ROUNDS} rounds, paired within each round; mean in brackets)\n` +
      rows
        .slice(1)
        .map((r) => `[bench]   ${r.name}: +${us(Number(r.extra?.addedP50Ns))} (+${us(Number(r.extra?.addedMeanNs))}), rounds ${r.extra?.addedP50RangeNs} ns\n`)
        .join('') +
      `[bench]   direct call itself: median ${us(Number(rows[0].extra?.p50Ns))}, mean ${us(rows[0].meanNs ?? 0)}\n` +
      `[bench]   RateLimitedLlm target (added cost): ${verdict}\n`,
  );
  return rows;
};

export default benchInstrumentation;
