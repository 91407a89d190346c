// The scenario file format, as plain types. k6 cannot load npm packages, so the k6 entry
// script reads these types only; Node validates the same shape with zod
// (scenario/schema.ts) before k6 starts. Times are seconds, rates are per minute.

export type TrafficClass = 'interactive' | 'batch';

/** What one user request looks like (defaults for every arrival). */
export interface RequestShape {
  /** Agent tree to call: review, wide, tools, review-workflow, or the app `serve` serves. */
  tree?: string;
  /** Input tokens per model call the document is sized for (ceil(chars/4) rule). */
  inputTokensPerCall?: number;
  /** Fan-out width for the `wide` tree. */
  width?: number;
  trafficClass?: TrafficClass;
}

/** `users` requests sent at the same instant, optionally repeated. */
export interface BurstArrival extends RequestShape {
  kind: 'burst';
  at: number;
  users: number;
  /** Repeat the burst `times` times in all, `every` seconds apart. */
  repeat?: { every: number; times: number };
}

/** Requests spread evenly at a constant rate (an open model: arrivals do not wait). */
export interface ConstantArrival extends RequestShape {
  kind: 'constant';
  start: number;
  perMinute: number;
  duration: number;
}

/** A rate that moves linearly through stages (a ramp to find the knee). */
export interface RampingArrival extends RequestShape {
  kind: 'ramping';
  start: number;
  startPerMinute: number;
  stages: { targetPerMinute: number; duration: number }[];
}

/** One recorded request of a trace. */
export interface TraceRecord {
  /** Seconds since the trace's first request. */
  at: number;
  tree: string;
  inputTokensPerCall: number;
  trafficClass: TrafficClass;
  width?: number;
}

/** A recorded trace replayed at its recorded times: inline records or a JSON-lines file. */
export interface TraceArrival extends RequestShape {
  kind: 'trace';
  start?: number;
  /** JSON-lines file of TraceRecords, relative to the scenario file (Node inlines it). */
  file?: string;
  records?: TraceRecord[];
}

export type Arrival = BurstArrival | ConstantArrival | RampingArrival | TraceArrival;

export interface Thresholds {
  /** Highest allowed share of failed HTTP requests (0..1). */
  httpFailedRate?: number;
  /** Highest allowed p95 request duration in ms, per traffic class. */
  p95Ms?: Partial<Record<TrafficClass, number>>;
  /** Highest allowed share of requests with at least one missing branch (0..1). */
  missingBranchesRate?: number;
  /** Raw k6 thresholds, merged in as they are. */
  k6?: Record<string, string[]>;
}

/** A mock-provider config change at `at` seconds after the run starts. */
export interface MockChange {
  at: number;
  set: Record<string, unknown>;
}

/** Which HTTP API the target serves: quotascope's agent service, or ADK's API server. */
export type Protocol = 'native' | 'adk';

/** An app served by an ADK API server (`adk api_server`, the Java dev server, `npx adk api_server`). */
export interface AdkTarget {
  /** The app name, as GET /list-apps lists it. */
  app: string;
  /** Prefix of every route, e.g. ADK Go's `/api`. */
  basePath?: string;
  /** One user id for every request (default: one per k6 VU). */
  userId?: string;
  /** POST /run_sse with `streaming: true` instead of POST /run. */
  streaming?: boolean;
  /** The user message; `{document}` stands for the sized document (default: the document alone). */
  message?: string;
  /** The tree's agent names: a run without an outcome for one of them counts as a missing branch. */
  authors?: string[];
}

export interface ScenarioFile {
  name: string;
  description?: string;
  /** Default native: POST {target}/v1/agents/{tree}/run. */
  protocol?: Protocol;
  /** Required when protocol is adk. */
  adk?: AdkTarget;
  /** Defaults for every arrival. */
  defaults?: RequestShape;
  arrivals: Arrival[];
  thresholds?: Thresholds;
  /** Mock-provider settings for this scenario: applied at start, then changed on a timeline. */
  mock?: { config?: Record<string, unknown>; timeline?: MockChange[] };
  /** Per-request HTTP timeout in seconds. */
  requestTimeout?: number;
  /** Seconds k6 lets running requests finish after an arrival window ends. */
  gracefulStop?: number;
}
