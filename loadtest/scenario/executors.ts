// k6 scenario objects and the arithmetic of k6's executors (duration strings, integer rates,
// pre-allocated VUs). Pure (no k6 imports), so Node tests can check it too.
import type { TraceRecord } from './types.ts';

/** What the k6 request function reads from a k6 scenario's env. */
export interface SlotEnv {
  [name: string]: string;
  TREE: string;
  TRAFFIC_CLASS: string;
  INPUT_TOKENS: string;
  WIDTH: string;
  /** For trace replay: index of the first record this k6 scenario sends. */
  TRACE_FIRST: string;
}

// A k6 scenario, loosely typed here so this file does not depend on k6's typings.
export interface K6Scenario {
  executor: 'per-vu-iterations' | 'constant-arrival-rate' | 'ramping-arrival-rate';
  startTime: string;
  gracefulStop: string;
  exec: string;
  env: SlotEnv;
  tags: Record<string, string>;
  vus?: number;
  iterations?: number;
  maxDuration?: string;
  rate?: number;
  startRate?: number;
  timeUnit?: string;
  duration?: string;
  stages?: { target: number; duration: string }[];
  preAllocatedVUs?: number;
  maxVUs?: number;
}

/** The fields every k6 scenario of one arrival shares. */
export type K6ScenarioBase = Omit<K6Scenario, 'executor' | 'startTime'>;

// Two arrivals closer than this are sent at the same instant when a trace is replayed.
const TRACE_RESOLUTION_MS = 10;

export const ms = (seconds: number): string => `${Math.max(0, Math.round(seconds * 1000))}ms`;

/**
 * k6 wants an integer `rate` per `timeUnit`. A whole per-minute rate keeps timeUnit 1m;
 * a fractional one is written per 100 minutes so 2.5/min stays exact enough.
 */
export function rateUnit(perMinuteRates: number[]): { factor: number; timeUnit: string } {
  const whole = perMinuteRates.every((r) => Number.isInteger(r));
  return whole ? { factor: 1, timeUnit: '60s' } : { factor: 100, timeUnit: '6000s' };
}

/**
 * VUs to pre-allocate for an open-model rate: Little's law with a generous request time (up to
 * 3 minutes: a tree of many sequential calls takes over a minute per request, and VUs k6 must
 * still start mid-run drop arrivals meanwhile).
 */
export function vusFor(peakPerMinute: number, requestTimeoutS: number): { preAllocatedVUs: number; maxVUs: number } {
  const inFlight = Math.ceil((peakPerMinute / 60) * Math.min(requestTimeoutS, 180));
  const preAllocatedVUs = Math.max(2, inFlight + 2);
  return { preAllocatedVUs, maxVUs: Math.max(preAllocatedVUs, Math.ceil((peakPerMinute / 60) * requestTimeoutS) + 2) };
}

/** Groups trace records that arrive within TRACE_RESOLUTION_MS into one simultaneous burst. */
export function bucketTrace(records: TraceRecord[]): { at: number; first: number; size: number }[] {
  const buckets: { at: number; first: number; size: number }[] = [];
  records.forEach((r, i) => {
    const last = buckets[buckets.length - 1];
    if (last && Math.round((r.at - last.at) * 1000) < TRACE_RESOLUTION_MS) last.size++;
    else buckets.push({ at: r.at, first: i, size: 1 });
  });
  return buckets;
}
