// A small Node stand-in for k6, used by `npm start` only where k6 is not installed: it
// replays the same scenario file (same arrival times, same documents, same request body)
// and reports the same summary fields. k6 stays the real tool: no thresholds, no remote write.
import { DEFAULT_INPUT_TOKENS, DEFAULT_REQUEST_TIMEOUT_S, DEFAULT_TREE } from './k6/build-options.ts';
import { documentForTokens } from './k6/document.ts';
import type { RequestShape, ScenarioFile, TrafficClass } from './k6/scenario-types.ts';
import type { K6Summary } from './k6-runner.ts';

export interface PlannedRequest {
  at: number;
  tree: string;
  trafficClass: TrafficClass;
  inputTokensPerCall: number;
  width?: number;
}

/** Every request of a scenario with its send time in seconds, in time order. */
export function arrivalTimes(s: ScenarioFile): PlannedRequest[] {
  const out: PlannedRequest[] = [];
  const shape = (a: RequestShape) => ({
    tree: a.tree ?? s.defaults?.tree ?? DEFAULT_TREE,
    trafficClass: a.trafficClass ?? s.defaults?.trafficClass ?? 'interactive',
    inputTokensPerCall: a.inputTokensPerCall ?? s.defaults?.inputTokensPerCall ?? DEFAULT_INPUT_TOKENS,
    width: a.width ?? s.defaults?.width,
  });
  for (const a of s.arrivals) {
    if (a.kind === 'burst') {
      for (let r = 0; r < (a.repeat?.times ?? 1); r++) {
        for (let u = 0; u < a.users; u++) out.push({ at: a.at + r * (a.repeat?.every ?? 0), ...shape(a) });
      }
    } else if (a.kind === 'constant') {
      if (a.perMinute > 0) for (let t = 0; t < a.duration; t += 60 / a.perMinute) out.push({ at: a.start + t, ...shape(a) });
    } else if (a.kind === 'ramping') {
      // Integrate the linear rate: one arrival each time the cumulative count passes an integer.
      let t = a.start;
      let count = 0;
      let rate = a.startPerMinute;
      for (const st of a.stages) {
        const steps = Math.max(1, Math.round(st.duration * 10));
        for (let i = 0; i < steps; i++) {
          const r = rate + ((st.targetPerMinute - rate) * (i + 0.5)) / steps;
          const dt = st.duration / steps;
          const before = Math.floor(count);
          count += (r / 60) * dt;
          for (let n = before; n < Math.floor(count); n++) out.push({ at: t + dt / 2, ...shape(a) });
          t += dt;
        }
        rate = st.targetPerMinute;
      }
    } else {
      for (const r of a.records ?? []) out.push({ ...shape(a), ...r, at: (a.start ?? 0) + r.at });
    }
  }
  return out.sort((x, y) => x.at - y.at);
}

const percentile = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : 0);

export async function runNodeDriver(s: ScenarioFile, target: string, onLine: (line: string) => void, signal?: AbortSignal): Promise<K6Summary> {
  const planned = arrivalTimes(s);
  const durations: number[] = [];
  const waits: number[] = [];
  let failed = 0;
  let missing = 0;
  let outcomes = 0;
  const start = Date.now();
  const progress = setInterval(() => onLine(`node driver: ${durations.length}/${planned.length} requests done`), 5000);
  const timeoutMs = (s.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S) * 1000;
  const send = async (r: PlannedRequest, i: number) => {
    const delay = start + r.at * 1000 - Date.now();
    if (delay > 0) await new Promise((res) => setTimeout(res, delay));
    if (signal?.aborted) return;
    const t0 = performance.now();
    try {
      const res = await fetch(`${target}/v1/agents/${r.tree}/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ document: documentForTokens(r.inputTokensPerCall, r.inputTokensPerCall), width: r.width, trafficClass: r.trafficClass, userId: `node-${i}` }),
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]),
      });
      const body = (await res.json().catch(() => ({}))) as { missingBranches?: string[]; permitWaitMs?: number; branches?: unknown[] };
      if (!res.ok) failed++;
      if (!res.ok || (body.missingBranches?.length ?? 0) > 0) missing++;
      if (typeof body.permitWaitMs === 'number') waits.push(body.permitWaitMs);
      outcomes += body.branches?.length ?? 0;
    } catch {
      failed++;
      missing++;
    }
    durations.push(performance.now() - t0);
  };
  await Promise.all(planned.map(send));
  clearInterval(progress);
  const d = [...durations].sort((a, b) => a - b);
  const w = [...waits].sort((a, b) => a - b);
  const n = Math.max(1, durations.length);
  return {
    requests: durations.length,
    failedRate: failed / n,
    durationMs: { p50: percentile(d, 0.5), p95: percentile(d, 0.95), p99: percentile(d, 0.99), max: d[d.length - 1] ?? 0 },
    permitWaitMs: { p50: percentile(w, 0.5), p95: percentile(w, 0.95), max: w[w.length - 1] ?? 0 },
    missingBranchesRate: missing / n,
    branchOutcomes: outcomes,
    droppedArrivals: 0,
    testRunDurationMs: Date.now() - start,
    thresholds: [],
  };
}
