// Helpers of the limiter tests: consuming a response stream, reading metric series, waiting
// for a condition. The fake model itself is in instrumentation/testing.ts.
import type { LlmResponse } from '@google/adk';
import type { AnyRegistry as Registry } from '../../instrumentation/metrics/limiter-metrics.ts';

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
