// A small Node stand-in for k6, used by `npm start` only where k6 is not installed: it
// replays the same scenario file (same arrival times, same documents, same request body)
// and reports the same summary fields. k6 stays the real tool: no thresholds, no remote write.
import { arrivalSends } from '../scenario/arrivals.ts';
import { DEFAULT_REQUEST_TIMEOUT_S, resolveRequest } from '../scenario/request.ts';
import type { ScenarioFile, TrafficClass } from '../scenario/types.ts';
import { documentForTokens } from '../scenario/document.ts';
import { isShedAnswer, type RequestCounts, requestOutcome, statusTag } from '../k6/request-status.ts';
import type { K6Summary } from '../k6/summary.ts';

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
  for (const a of s.arrivals) {
    const shape = resolveRequest(a, s.defaults);
    for (const { at, record } of arrivalSends(a)) out.push({ ...shape, ...record, at });
  }
  return out.sort((x, y) => x.at - y.at);
}

/** The nearest-rank quantile `p` of ascending `sorted` (0 when empty). */
export const percentile = (sorted: readonly number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : 0);

export async function runNodeDriver(s: ScenarioFile, target: string, onLine: (line: string) => void, signal?: AbortSignal): Promise<K6Summary> {
  const planned = arrivalTimes(s);
  const durations: number[] = [];
  const servedDurations: number[] = [];
  const byKind: Record<string, number> = {};
  const waits: number[] = [];
  let failed = 0;
  let failedRequests = 0;
  const statusCodes: Record<string, number> = {};
  const countStatus = (status: number) => {
    const tag = statusTag(status);
    statusCodes[tag] = (statusCodes[tag] ?? 0) + 1;
  };
  let missing = 0;
  let outcomes = 0;
  let started = 0;
  const counts: RequestCounts = { served: 0, partial: 0, shed: 0, failed: 0, unfinished: 0 };
  const start = Date.now();
  const progress = setInterval(() => onLine(`node driver: ${durations.length}/${planned.length} requests done`), 5000);
  const timeoutMs = (s.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S) * 1000;
  const send = async (r: PlannedRequest, i: number) => {
    const delay = start + r.at * 1000 - Date.now();
    if (delay > 0) await new Promise((res) => setTimeout(res, delay));
    if (signal?.aborted) return;
    const t0 = performance.now();
    started++;
    try {
      const res = await fetch(`${target}/v1/agents/${r.tree}/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ document: documentForTokens(r.inputTokensPerCall, r.inputTokensPerCall), width: r.width, trafficClass: r.trafficClass, userId: `node-${i}` }),
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]),
      });
      const body = (await res.json().catch(() => ({}))) as { missingBranches?: string[]; permitWaitMs?: number; branches?: { outcome: string }[] };
      countStatus(res.status);
      const shed = isShedAnswer(res.status, body);
      const outcome = requestOutcome(res.status, shed, res.ok ? body.branches?.map((b) => b.outcome) : undefined, body.missingBranches?.length ?? 0);
      counts[outcome]++;
      if (outcome === 'failed') failedRequests++;
      if (!res.ok) failed++;
      if (!shed && (!res.ok || (body.missingBranches?.length ?? 0) > 0)) missing++;
      if (typeof body.permitWaitMs === 'number') waits.push(body.permitWaitMs);
      outcomes += body.branches?.length ?? 0;
      for (const b of body.branches ?? []) byKind[b.outcome] = (byKind[b.outcome] ?? 0) + 1;
      if (outcome === 'served') servedDurations.push(performance.now() - t0);
    } catch {
      // Cut off by the run's end (Ctrl-C): unfinished, not failed.
      if (signal?.aborted) return;
      countStatus(0);
      counts.failed++;
      failedRequests++;
      failed++;
      missing++;
    }
    durations.push(performance.now() - t0);
  };
  await Promise.all(planned.map(send));
  clearInterval(progress);
  const d = [...durations].sort((a, b) => a - b);
  const w = [...waits].sort((a, b) => a - b);
  const sd = [...servedDurations].sort((a, b) => a - b);
  const n = Math.max(1, durations.length);
  return {
    requests: durations.length,
    failedRate: failed / n,
    failedRequests,
    outcomes: { ...counts, unfinished: started - (counts.served + counts.partial + counts.shed + counts.failed) },
    statusCodes,
    durationMs: { p50: percentile(d, 0.5), p95: percentile(d, 0.95), p99: percentile(d, 0.99), max: d[d.length - 1] ?? 0 },
    servedDurationMs: { p50: percentile(sd, 0.5), p95: percentile(sd, 0.95), p99: percentile(sd, 0.99), max: sd[sd.length - 1] ?? 0 },
    permitWaitMs: { p50: percentile(w, 0.5), p95: percentile(w, 0.95), max: w[w.length - 1] ?? 0 },
    missingBranchesRate: missing / n,
    branchOutcomes: outcomes,
    branchOutcomesByKind: byKind,
    droppedArrivals: 0,
    testRunDurationMs: Date.now() - start,
    thresholds: [],
  };
}
