// Turns a scenario file into k6 `options.scenarios` and thresholds. Pure (no k6 imports),
// so Node tests can check it too. Each arrival becomes one or more k6 scenarios whose
// `env` tells the request function what to send.
import type { Arrival, RequestShape, ScenarioFile, TraceRecord } from './scenario-types.ts';

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

export interface BuiltOptions {
  scenarios: Record<string, K6Scenario>;
  thresholds: Record<string, string[]>;
  /** The trace records in send order (index = TRACE_FIRST + iteration). */
  trace: TraceRecord[];
}

export const DEFAULT_TREE = 'review';
export const DEFAULT_INPUT_TOKENS = 5000;
export const DEFAULT_REQUEST_TIMEOUT_S = 120;
export const DEFAULT_GRACEFUL_STOP_S = 30;
// Two arrivals closer than this are sent at the same instant when a trace is replayed.
const TRACE_RESOLUTION_MS = 10;

const ms = (seconds: number): string => `${Math.max(0, Math.round(seconds * 1000))}ms`;

function slotEnv(shape: RequestShape, defaults: RequestShape | undefined, traceFirst = -1): SlotEnv {
  return {
    TREE: shape.tree ?? defaults?.tree ?? DEFAULT_TREE,
    TRAFFIC_CLASS: shape.trafficClass ?? defaults?.trafficClass ?? 'interactive',
    INPUT_TOKENS: String(shape.inputTokensPerCall ?? defaults?.inputTokensPerCall ?? DEFAULT_INPUT_TOKENS),
    WIDTH: String(shape.width ?? defaults?.width ?? ''),
    TRACE_FIRST: String(traceFirst),
  };
}

/**
 * k6 wants an integer `rate` per `timeUnit`. A whole per-minute rate keeps timeUnit 1m;
 * a fractional one is written per 100 minutes so 2.5/min stays exact enough.
 */
export function rateUnit(perMinuteRates: number[]): { factor: number; timeUnit: string } {
  const whole = perMinuteRates.every((r) => Number.isInteger(r));
  return whole ? { factor: 1, timeUnit: '60s' } : { factor: 100, timeUnit: '6000s' };
}

/** VUs to pre-allocate for an open-model rate: Little's law with a generous request time. */
function vusFor(peakPerMinute: number, requestTimeoutS: number): { preAllocatedVUs: number; maxVUs: number } {
  const inFlight = Math.ceil((peakPerMinute / 60) * Math.min(requestTimeoutS, 60));
  const preAllocatedVUs = Math.max(2, inFlight + 2);
  return { preAllocatedVUs, maxVUs: Math.max(preAllocatedVUs, Math.ceil((peakPerMinute / 60) * requestTimeoutS) + 2) };
}

function burstScenarios(a: Extract<Arrival, { kind: 'burst' }>, base: Omit<K6Scenario, 'executor' | 'startTime'>, maxDurationS: number) {
  const times = a.repeat?.times ?? 1;
  const out: K6Scenario[] = [];
  for (let i = 0; i < times; i++) {
    out.push({
      ...base,
      executor: 'per-vu-iterations',
      startTime: ms(a.at + i * (a.repeat?.every ?? 0)),
      vus: a.users,
      iterations: 1,
      maxDuration: ms(maxDurationS),
    });
  }
  return out;
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

export function buildOptions(file: ScenarioFile): BuiltOptions {
  const requestTimeoutS = file.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S;
  const gracefulStop = ms(file.gracefulStop ?? DEFAULT_GRACEFUL_STOP_S);
  const scenarios: Record<string, K6Scenario> = {};
  const trace: TraceRecord[] = [];
  const add = (kind: string, index: number, list: K6Scenario[]) => {
    list.forEach((s, j) => {
      scenarios[list.length > 1 ? `${kind}_${index}_${j}` : `${kind}_${index}`] = s;
    });
  };

  file.arrivals.forEach((a, index) => {
    const trafficClass = a.trafficClass ?? file.defaults?.trafficClass ?? 'interactive';
    const base = {
      gracefulStop,
      exec: 'userRequest',
      env: slotEnv(a, file.defaults),
      tags: { arrival: `${a.kind}_${index}`, traffic_class: trafficClass },
    };
    switch (a.kind) {
      case 'burst':
        add('burst', index, burstScenarios(a, base, requestTimeoutS + 5));
        break;
      case 'constant': {
        const { factor, timeUnit } = rateUnit([a.perMinute]);
        add('constant', index, [
          {
            ...base,
            executor: 'constant-arrival-rate',
            startTime: ms(a.start),
            rate: Math.round(a.perMinute * factor),
            timeUnit,
            duration: ms(a.duration),
            ...vusFor(a.perMinute, requestTimeoutS),
          },
        ]);
        break;
      }
      case 'ramping': {
        const rates = [a.startPerMinute, ...a.stages.map((s) => s.targetPerMinute)];
        const { factor, timeUnit } = rateUnit(rates);
        add('ramping', index, [
          {
            ...base,
            executor: 'ramping-arrival-rate',
            startTime: ms(a.start),
            startRate: Math.round(a.startPerMinute * factor),
            timeUnit,
            stages: a.stages.map((s) => ({ target: Math.round(s.targetPerMinute * factor), duration: ms(s.duration) })),
            ...vusFor(Math.max(...rates), requestTimeoutS),
          },
        ]);
        break;
      }
      case 'trace': {
        const records = [...(a.records ?? [])].sort((x, y) => x.at - y.at);
        const offset = trace.length;
        trace.push(...records);
        const list = bucketTrace(records).map(
          (b): K6Scenario => ({
            ...base,
            executor: 'per-vu-iterations',
            startTime: ms((a.start ?? 0) + b.at),
            vus: b.size,
            iterations: 1,
            maxDuration: ms(requestTimeoutS + 5),
            env: slotEnv(a, file.defaults, offset + b.first),
          }),
        );
        if (list.length === 0) throw new Error(`arrivals[${index}]: trace has no records (Node inlines trace files)`);
        add('trace', index, list);
        break;
      }
    }
  });

  return { scenarios, thresholds: buildThresholds(file), trace };
}

export function buildThresholds(file: ScenarioFile): Record<string, string[]> {
  const t = file.thresholds ?? {};
  const out: Record<string, string[]> = {};
  if (t.httpFailedRate !== undefined) out['http_req_failed'] = [`rate<=${t.httpFailedRate}`];
  for (const [cls, limit] of Object.entries(t.p95Ms ?? {})) {
    if (limit !== undefined) out[`qs_request_duration{traffic_class:${cls}}`] = [`p(95)<${limit}`];
  }
  if (t.missingBranchesRate !== undefined) out['qs_missing_branches'] = [`rate<=${t.missingBranchesRate}`];
  for (const [metric, exprs] of Object.entries(t.k6 ?? {})) out[metric] = [...(out[metric] ?? []), ...exprs];
  return out;
}
