// Benchmark of the rate-limited wrapper's overhead per uncontended call: a delegate that
// answers at once, called directly (baseline), through RateLimitedLlm (semaphore, token
// budget, prom-client metrics, no-op OTel), and through p-limit and bottleneck configured
// for the same concurrency. The difference in mean time per call is each limiter's cost.
import { BaseLlm, type BaseLlmConnection, type LlmRequest, type LlmResponse } from '@google/adk';
import Bottleneck from 'bottleneck';
import pLimit from 'p-limit';
import { Registry } from 'prom-client';
import { Bench, type Task } from 'tinybench';
import { RateLimitedLlm, TokenBudget } from '../instrumentation/index.ts';
import type { BenchModule, BenchRow } from './types.ts';

const group = 'instrumentation: overhead per uncontended model call';
const CONCURRENCY = 10;

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

// The median is reported beside the mean: on a shared machine a few descheduled samples
// (milliseconds each) can dominate the mean of a microsecond-scale task.
function row(task: Task, baseline: boolean, base?: { meanNs: number; p50Ns: number }): BenchRow {
  const result = task.result;
  if (result.state !== 'completed') throw new Error(`bench task '${task.name}' ended ${result.state}`);
  const meanNs = result.period * 1e6;
  const p50Ns = result.latency.p50 * 1e6;
  return {
    group,
    name: task.name,
    baseline,
    opsPerSec: 1000 / result.period,
    meanNs,
    extra: {
      p50Ns: Math.round(p50Ns),
      p99Ns: Math.round(result.latency.p99 * 1e6),
      samples: result.latency.samplesCount,
      ...(base === undefined
        ? {}
        : { addedMeanNs: Math.round(meanNs - base.meanNs), addedP50Ns: Math.round(p50Ns - base.p50Ns) }),
    },
  };
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
  let sink = 0;
  const bench = new Bench({ time: 500, warmupTime: 150 });
  bench
    .add('delegate called directly', async () => {
      sink += await drain(delegate.generateContentAsync(request));
    })
    .add('through RateLimitedLlm (permit + budget + metrics)', async () => {
      sink += await drain(wrapper.generateContentAsync(request));
    })
    .add(`through p-limit(${CONCURRENCY})`, async () => {
      sink += await limit(() => drain(delegate.generateContentAsync(request)));
    })
    .add(`through bottleneck({ maxConcurrent: ${CONCURRENCY} })`, async () => {
      sink += await bottleneck.schedule(() => drain(delegate.generateContentAsync(request)));
    });
  await bench.run();
  wrapper.close();
  await bottleneck.stop({ dropWaitingJobs: false });
  if (sink === 0) throw new Error('instrumentation bench computed nothing');
  const [direct, ...others] = bench.tasks;
  const baseRow = row(direct, true);
  const base = { meanNs: baseRow.meanNs ?? 0, p50Ns: Number(baseRow.extra?.p50Ns) };
  return [baseRow, ...others.map((t) => row(t, false, base))];
};

export default benchInstrumentation;
