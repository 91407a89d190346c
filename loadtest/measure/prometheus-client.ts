// The few Prometheus HTTP API queries the measurements and the report need.

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

async function api(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { status: string; data: unknown; error?: string };
  if (body.status !== 'success') throw new Error(`prometheus: ${body.error ?? res.status}`);
  return body.data;
}

/** An instant query; `time` in epoch ms (now when absent). */
export async function query(prometheusUrl: string, expr: string, time?: number): Promise<Sample[]> {
  const params = new URLSearchParams({ query: expr });
  if (time !== undefined) params.set('time', String(time / 1000));
  const data = (await api(`${prometheusUrl}/api/v1/query?${params}`)) as { result: { metric: Record<string, string>; value: [number, string] }[] };
  return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

/** The first sample's value, or undefined when the query returned nothing or NaN. */
export async function queryScalar(prometheusUrl: string, expr: string, time?: number): Promise<number | undefined> {
  const [first] = await query(prometheusUrl, expr, time);
  return first && Number.isFinite(first.value) ? first.value : undefined;
}

export interface Series {
  metric: Record<string, string>;
  points: [number, number][];
}

/** A range query; start and end in epoch ms; points are [epoch ms, value]. */
export async function queryRange(prometheusUrl: string, expr: string, start: number, end: number, stepSeconds: number): Promise<Series[]> {
  const params = new URLSearchParams({ query: expr, start: String(start / 1000), end: String(end / 1000), step: String(stepSeconds) });
  const data = (await api(`${prometheusUrl}/api/v1/query_range?${params}`)) as { result: { metric: Record<string, string>; values: [number, string][] }[] };
  return data.result.map((r) => ({ metric: r.metric, points: r.values.map(([t, v]) => [Math.round(t * 1000), Number(v)] as [number, number]) }));
}

export interface Alert {
  name: string;
  state: string;
  activeAt?: string;
}

/** Alerts pending or firing right now. */
export async function alerts(prometheusUrl: string): Promise<Alert[]> {
  const data = (await api(`${prometheusUrl}/api/v1/alerts`)) as { alerts: { labels: Record<string, string>; state: string; activeAt?: string }[] };
  return data.alerts.map((a) => ({ name: a.labels.alertname ?? '?', state: a.state, activeAt: a.activeAt }));
}

/** Alerts that fired at any time in [start, end] (from the ALERTS series), by name. */
export async function alertsFiredBetween(prometheusUrl: string, start: number, end: number): Promise<string[]> {
  const seconds = Math.max(1, Math.ceil((end - start) / 1000));
  const samples = await query(prometheusUrl, `max by (alertname) (max_over_time(ALERTS{alertstate="firing"}[${seconds}s]))`, end);
  return samples.map((s) => s.metric.alertname).sort();
}


/** How many alerting rules Prometheus has loaded (fails when it cannot be reached). */
export async function alertRuleCount(prometheusUrl: string): Promise<number> {
  const data = (await api(`${prometheusUrl}/api/v1/rules?type=alert`)) as { groups: { rules: unknown[] }[] };
  return data.groups.reduce((n, g) => n + g.rules.length, 0);
}

/** An instant query at `time` (epoch ms): its samples, or (`scalar`) the first sample's value (undefined when none or NaN). */
export interface InstantQuery {
  readonly kind: 'instant' | 'scalar';
  readonly expr: string;
  readonly time: number;
  /** A failure is part of the answer ({ error }) instead of failing the pass. */
  readonly orError?: true;
}

/** A range query over [start, end] (epoch ms) at `step` seconds. */
export interface RangeQuery {
  readonly kind: 'range';
  readonly expr: string;
  readonly start: number;
  readonly end: number;
  readonly step: number;
  readonly orError?: true;
}

/** The alerts pending or firing now. */
export interface AlertsQuery {
  readonly kind: 'alerts';
  readonly orError?: true;
}

/** How many alerting rules are loaded. */
export interface AlertRulesQuery {
  readonly kind: 'alert-rules';
  readonly orError?: true;
}

export type Query = InstantQuery | RangeQuery | AlertsQuery | AlertRulesQuery;

/** A query that failed without failing the pass; `cause` is its error's cause, when it has one (a refused connection). */
export interface QueryError {
  readonly error: string;
  readonly cause?: string;
}

type AnswerOf<Q extends Query> = Q extends { kind: 'scalar' } ? number | undefined : Q extends InstantQuery ? Sample[] : Q extends RangeQuery ? Series[] : Q extends AlertsQuery ? Alert[] : number;

/** The answers to a tree of queries: the same tree, each query replaced by its answer (or its QueryError where it may fail). */
export type Answers<T> = T extends Query
  ? T extends { orError: true }
    ? AnswerOf<T> | QueryError
    : AnswerOf<T>
  : T extends readonly (infer U)[]
    ? Answers<U>[]
    : T extends object
      ? { [K in keyof T]: Answers<T[K]> }
      : T;

const isQuery = (value: object): value is Query => 'kind' in value && ['instant', 'scalar', 'range', 'alerts', 'alert-rules'].includes((value as Query).kind);

async function answerOne(prometheusUrl: string, q: Query): Promise<unknown> {
  if (q.kind === 'instant') return query(prometheusUrl, q.expr, q.time);
  if (q.kind === 'scalar') return queryScalar(prometheusUrl, q.expr, q.time);
  if (q.kind === 'range') return queryRange(prometheusUrl, q.expr, q.start, q.end, q.step);
  if (q.kind === 'alerts') return alerts(prometheusUrl);
  return alertRuleCount(prometheusUrl);
}

/**
 * Runs every query of `queries` (a tree of objects and arrays whose leaves are queries), one
 * after another in the tree's order, and answers with the same tree. The first query that
 * fails fails the pass, unless it is marked `orError`.
 */
export async function answerQueries<T>(prometheusUrl: string, queries: T): Promise<Answers<T>> {
  if (queries === null || typeof queries !== 'object') return queries as Answers<T>;
  if (isQuery(queries)) {
    try {
      return (await answerOne(prometheusUrl, queries)) as Answers<T>;
    } catch (error) {
      if (!queries.orError) throw error;
      const cause = (error as Error & { cause?: Error }).cause?.message;
      return { error: (error as Error).message, ...(cause ? { cause } : {}) } as Answers<T>;
    }
  }
  if (Array.isArray(queries)) {
    const answers: unknown[] = [];
    for (const q of queries) answers.push(await answerQueries(prometheusUrl, q));
    return answers as Answers<T>;
  }
  // A gate that fails (`gate: true`, say the alerting rules of a Prometheus that does not answer) answers its later siblings with its error.
  const answers: Record<string, unknown> = {};
  let gate: QueryError | undefined;
  for (const [key, q] of Object.entries(queries)) {
    answers[key] = gate ? failedWith(q, gate) : await answerQueries(prometheusUrl, q);
    const answer = answers[key];
    if (!gate && typeof q === 'object' && q !== null && 'gate' in q && typeof answer === 'object' && answer !== null && 'error' in answer) gate = answer as QueryError;
  }
  return answers as Answers<T>;
}

/** `queries` with every query answered `error` (what is not a query kept). */
function failedWith(queries: unknown, error: QueryError): unknown {
  if (queries === null || typeof queries !== 'object') return queries;
  if (isQuery(queries)) return error;
  if (Array.isArray(queries)) return queries.map((q) => failedWith(q, error));
  return Object.fromEntries(Object.entries(queries).map(([key, q]) => [key, failedWith(q, error)]));
}
