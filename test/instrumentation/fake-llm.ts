// A scripted model delegate for limiter tests: the model is not under test, the limiter is.
// Each call runs `script`, which yields responses or throws; the fake counts calls and
// tracks how many are running at once.
import { BaseLlm, type BaseLlmConnection, type LlmRequest, type LlmResponse } from '@google/adk';
import type { AnyRegistry as Registry } from '../../instrumentation/index.ts';

export interface FakeCall {
  readonly index: number;
  readonly request: LlmRequest;
  readonly stream: boolean;
  readonly signal: AbortSignal | undefined;
}

export type Script = (call: FakeCall) => AsyncGenerator<LlmResponse, void>;

export class FakeLlm extends BaseLlm {
  calls: FakeCall[] = [];
  inFlight = 0;
  maxInFlight = 0;
  finished = 0;
  readonly #script: Script;

  constructor(script: Script, model = 'fake-model') {
    super({ model });
    this.#script = script;
  }

  async *generateContentAsync(request: LlmRequest, stream = false, signal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    const call = { index: this.calls.length, request, stream, signal };
    this.calls.push(call);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      yield* this.#script(call);
    } finally {
      this.inFlight--;
      this.finished++;
    }
  }

  connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error('not supported'));
  }
}

export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    });
  });
}

export function textResponse(text: string, totalTokenCount?: number, partial = false): LlmResponse {
  return {
    content: { role: 'model', parts: [{ text }] },
    partial,
    ...(totalTokenCount === undefined ? {} : { usageMetadata: { totalTokenCount, promptTokenCount: Math.floor(totalTokenCount / 2), candidatesTokenCount: totalTokenCount - Math.floor(totalTokenCount / 2) } }),
  };
}

export function request(agent?: string, text = 'review this'): LlmRequest {
  return {
    contents: [{ role: 'user', parts: [{ text }] }],
    config: agent ? { labels: { adk_agent_name: agent } } : {},
    toolsDict: {},
    liveConnectConfig: {},
  } as LlmRequest;
}

/** Pull every response; returns them, or the error thrown. */
export async function consume(gen: AsyncGenerator<LlmResponse, void>): Promise<{ responses: LlmResponse[]; error?: unknown }> {
  const responses: LlmResponse[] = [];
  try {
    for await (const r of gen) responses.push(r);
    return { responses };
  } catch (error) {
    return { responses, error };
  }
}

/** Value of one series of a metric (0 when absent). */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`metric ${name} not registered`);
  const data = await metric.get();
  let total = 0;
  for (const v of data.values) {
    const l = v.labels as Record<string, string | number>;
    if ((v as { metricName?: string }).metricName && (v as { metricName?: string }).metricName !== name) continue;
    if (Object.entries(labels).every(([k, val]) => l[k] === val)) total += v.value;
  }
  return total;
}

/** Count of a histogram series. */
export async function histogramCount(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`metric ${name} not registered`);
  const data = await metric.get();
  let total = 0;
  for (const v of data.values) {
    if ((v as { metricName?: string }).metricName !== `${name}_count`) continue;
    const l = v.labels as Record<string, string | number>;
    if (Object.entries(labels).every(([k, val]) => l[k] === val)) total += v.value;
  }
  return total;
}

/** Resolve when `predicate` holds, polling every few ms; fail after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await delay(2);
  }
}
