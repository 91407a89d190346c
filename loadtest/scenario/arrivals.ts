// The arrival kinds of a scenario file (burst, constant, ramping, trace), each described
// once: its label, the time spans its requests start in, every request's send time, how it scales,
// and the k6 scenarios it becomes. Every consumer (scenario scaling, the k6 options, the
// Node driver, the steady-state check) goes through here. Pure (no Node or k6 imports),
// so the k6 script uses it too.
import { type K6Scenario, type K6ScenarioBase, bucketTrace, ms, rateUnit, type SlotEnv, vusFor } from './executors.ts';
import type { Arrival, TraceRecord } from './types.ts';

/** One request an arrival sends: seconds since the scenario started, and the trace record it replays. */
export interface Send {
  at: number;
  record?: TraceRecord;
}

/** How times, rates and users change when a scenario is scaled. */
export interface Scaler {
  time: (seconds: number) => number;
  rate: (perMinute: number) => number;
  users: (users: number) => number;
}

/** What building one arrival's k6 scenarios needs. */
export interface K6Context {
  base: K6ScenarioBase;
  requestTimeoutS: number;
  index: number;
  /** Trace records in send order across the whole scenario; a trace arrival appends to it. */
  trace: TraceRecord[];
  /** The request env of this arrival, with the index of the first trace record it sends. */
  envFor: (traceFirst: number) => SlotEnv;
}

interface ArrivalKind<A extends Arrival> {
  /** A short name for people (the run's progress line): `burst of 40`, `steady 120/min`. */
  label(a: A): string;
  /** [from, to] in seconds of the times its requests start at (a burst: single instants). */
  spans(a: A): [number, number][];
  /** Every request it sends, in its own order. */
  sends(a: A): Send[];
  scale(a: A, s: Scaler): A;
  k6(a: A, ctx: K6Context): K6Scenario[];
}

type Kind = Arrival['kind'];
type ArrivalOf<K extends Kind> = Extract<Arrival, { kind: K }>;

const stagesSeconds = (stages: { duration: number }[]): number => stages.reduce((sum, st) => sum + st.duration, 0);
const burstTimes = (a: ArrivalOf<'burst'>): number[] => Array.from({ length: a.repeat?.times ?? 1 }, (_, i) => a.at + i * (a.repeat?.every ?? 0));
const traceEnd = (a: ArrivalOf<'trace'>): number => (a.start ?? 0) + Math.max(0, ...(a.records ?? []).map((r) => r.at));

/**
 * An open-model (arrival-rate) k6 scenario from `start`: the rate unit its per-minute `rates`
 * need, VUs for the highest of them, and the executor's own fields (`perUnit` turns a
 * per-minute rate into k6's integer rate per timeUnit).
 */
function arrivalRate(
  { base, requestTimeoutS }: K6Context,
  executor: 'constant-arrival-rate' | 'ramping-arrival-rate',
  start: number,
  rates: number[],
  fields: (perUnit: (perMinute: number) => number) => Partial<K6Scenario>,
): K6Scenario[] {
  const { factor, timeUnit } = rateUnit(rates);
  return [{ ...base, executor, startTime: ms(start), timeUnit, ...fields((perMinute) => Math.round(perMinute * factor)), ...vusFor(Math.max(...rates), requestTimeoutS) }];
}

const kinds: { [K in Kind]: ArrivalKind<ArrivalOf<K>> } = {
  burst: {
    label: (a) => `burst of ${a.users}`,
    spans: (a) => burstTimes(a).map((t) => [t, t]),
    sends: (a) => burstTimes(a).flatMap((at) => Array.from({ length: a.users }, () => ({ at }))),
    scale: (a, s) => ({ ...a, at: s.time(a.at), users: s.users(a.users), repeat: a.repeat && { ...a.repeat, every: s.time(a.repeat.every) } }),
    k6: (a, { base, requestTimeoutS }) =>
      burstTimes(a).map((at) => ({ ...base, executor: 'per-vu-iterations', startTime: ms(at), vus: a.users, iterations: 1, maxDuration: ms(requestTimeoutS + 5) })),
  },
  constant: {
    label: (a) => `steady ${a.perMinute}/min`,
    spans: (a) => [[a.start, a.start + a.duration]],
    sends: (a) => {
      const out: Send[] = [];
      if (a.perMinute > 0) for (let t = 0; t < a.duration; t += 60 / a.perMinute) out.push({ at: a.start + t });
      return out;
    },
    scale: (a, s) => ({ ...a, start: s.time(a.start), duration: s.time(a.duration), perMinute: s.rate(a.perMinute) }),
    k6: (a, ctx) => arrivalRate(ctx, 'constant-arrival-rate', a.start, [a.perMinute], (perUnit) => ({ rate: perUnit(a.perMinute), duration: ms(a.duration) })),
  },
  ramping: {
    label: () => 'ramping',
    spans: (a) => [[a.start, a.start + stagesSeconds(a.stages)]],
    sends: (a) => {
      // Integrate the linear rate: one arrival each time the cumulative count passes an integer.
      const out: Send[] = [];
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
          for (let n = before; n < Math.floor(count); n++) out.push({ at: t + dt / 2 });
          t += dt;
        }
        rate = st.targetPerMinute;
      }
      return out;
    },
    scale: (a, s) => ({
      ...a,
      start: s.time(a.start),
      startPerMinute: s.rate(a.startPerMinute),
      stages: a.stages.map((st) => ({ duration: s.time(st.duration), targetPerMinute: s.rate(st.targetPerMinute) })),
    }),
    k6: (a, ctx) =>
      arrivalRate(ctx, 'ramping-arrival-rate', a.start, [a.startPerMinute, ...a.stages.map((s) => s.targetPerMinute)], (perUnit) => ({
        startRate: perUnit(a.startPerMinute),
        stages: a.stages.map((s) => ({ target: perUnit(s.targetPerMinute), duration: ms(s.duration) })),
      })),
  },
  trace: {
    label: () => 'trace',
    spans: (a) => [[a.start ?? 0, traceEnd(a)]],
    sends: (a) => (a.records ?? []).map((record) => ({ at: (a.start ?? 0) + record.at, record })),
    scale: (a, s) => ({ ...a, start: a.start === undefined ? undefined : s.time(a.start), records: a.records?.map((r) => ({ ...r, at: s.time(r.at) })) }),
    k6: (a, { base, requestTimeoutS, index, trace, envFor }) => {
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
          env: envFor(offset + b.first),
        }),
      );
      if (list.length === 0) throw new Error(`arrivals[${index}]: trace has no records (Node inlines trace files)`);
      return list;
    },
  },
};

// The table is keyed by kind, so each entry fits the arrival it is looked up for.
const kindOf = (a: Arrival): ArrivalKind<Arrival> => kinds[a.kind] as unknown as ArrivalKind<Arrival>;

/** A short name of the arrival for people. */
export const arrivalLabel = (a: Arrival): string => kindOf(a).label(a);
/** The [from, to] spans, in seconds, that an arrival's requests start in. */
export const arrivalSpans = (a: Arrival): [number, number][] => kindOf(a).spans(a);
/** Every request an arrival sends. */
export const arrivalSends = (a: Arrival): Send[] => kindOf(a).sends(a);
/** The arrival with times, rates and users scaled. */
export const scaleArrival = (a: Arrival, s: Scaler): Arrival => kindOf(a).scale(a, s);
/** The k6 scenarios an arrival becomes. */
export const k6ScenariosOf = (a: Arrival, ctx: K6Context): K6Scenario[] => kindOf(a).k6(a, ctx);
