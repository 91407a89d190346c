// Per-request accounting of the limiter's call reports. The wrapper calls onCallEnd once
// per model call, synchronously inside that call's async context; ADK runs every branch
// inside the request's runAsync, so an AsyncLocalStorage opened around the run sees
// exactly that request's calls, even with many requests interleaved on one wrapper. The
// same context carries the request's traffic class, which picks the limiter's lane.
import { AsyncLocalStorage } from 'node:async_hooks';

/** What the wrapper reports per finished call (the instrumentation's CallReport contract). */
export interface CallReportLike {
  agent: string;
  outcome: string;
  waitMs: number;
  reservedTokens: number;
  actualTokens: number;
}

export interface RequestUsage {
  modelCalls: number;
  callsByOutcome: Record<string, number>;
  tokens: { reserved: number; actual: number };
  /** Longest permit + budget wait of any one call: what the slowest branch queued. */
  permitWaitMs: number;
  /** Sum of every call's wait. */
  permitWaitTotalMs: number;
}

interface RunContext {
  readonly reports: CallReportLike[];
  readonly trafficClass: string | undefined;
}

const store = new AsyncLocalStorage<RunContext>();

/** Runs `fn` with a fresh report list (the wrapper's onCallEnd appends to it) and the request's traffic class. */
export function withCallReports<T>(
  fn: () => Promise<T>,
  options: { trafficClass?: string } = {},
): { reports: CallReportLike[]; result: Promise<T> } {
  const reports: CallReportLike[] = [];
  return { reports, result: store.run({ reports, trafficClass: options.trafficClass }, fn) };
}

/** The wrapper's onCallEnd hook. Calls outside any request (none expected) are ignored. */
export function recordCallReport(report: CallReportLike): void {
  store.getStore()?.reports.push(report);
}

/** The traffic class of the request whose run is the current async context (the wrapper's laneOf). */
export function currentTrafficClass(): string | undefined {
  return store.getStore()?.trafficClass;
}

export function summarizeUsage(reports: readonly CallReportLike[]): RequestUsage {
  const usage: RequestUsage = {
    modelCalls: reports.length,
    callsByOutcome: {},
    tokens: { reserved: 0, actual: 0 },
    permitWaitMs: 0,
    permitWaitTotalMs: 0,
  };
  for (const r of reports) {
    usage.callsByOutcome[r.outcome] = (usage.callsByOutcome[r.outcome] ?? 0) + 1;
    usage.tokens.reserved += r.reservedTokens;
    usage.tokens.actual += r.actualTokens;
    usage.permitWaitMs = Math.max(usage.permitWaitMs, r.waitMs);
    usage.permitWaitTotalMs += r.waitMs;
  }
  usage.permitWaitMs = Math.round(usage.permitWaitMs);
  usage.permitWaitTotalMs = Math.round(usage.permitWaitTotalMs);
  return usage;
}
