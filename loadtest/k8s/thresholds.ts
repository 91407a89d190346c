// The pass/fail of a distributed k6 run, decided afterwards from the metrics its runners
// remote-wrote to Prometheus, with the scenario's own k6 thresholds. k6-operator runs N k6
// processes that each see only their execution segment, so no runner's verdict is the
// run's. Each runner writes, per k6 time series (one tag set), the stats of everything it
// measured since it started (stats mode: `k6_<trend>_p95`, `_avg`, `_count`, …; Counters
// as `_total`; Rates as `_rate`). The last value of every series therefore describes one
// disjoint part of the run's samples, and the run's figure is pooled from those parts:
// - exactly where the parts carry enough: counts and Counter totals add up, min/max are the
//   min/max of the parts, an average is the count-weighted mean of the averages, and a Rate
//   is weighted by a counter that counts the same samples under the same tags;
// - otherwise as an interval: a pooled quantile (or an unweighted Rate) lies between the
//   smallest and the largest value of the parts, because the pooled distribution is a mixture
//   of theirs (k6 interpolates between neighbouring samples, which can move a part's figure
//   by up to one sample gap: nothing at load-test sample sizes). A threshold passes only when
//   the whole interval passes; an interval that straddles the limit fails as unproven.
import { z } from 'zod';
import { k6 as k6Metrics } from '../../dashboards/metrics.ts';
import { query, queryScalar, type Sample } from '../measure/prometheus-client.ts';

/** A k6 threshold that cannot be evaluated from Prometheus (the message names it). */
export class ThresholdError extends Error {
  override name = 'ThresholdError';
}

const OPERATORS = ['<=', '>=', '===', '==', '!=', '<', '>'] as const;
type Operator = (typeof OPERATORS)[number];

/** Trends whose values are times: k6 writes them in seconds; thresholds are in ms. */
const TIME_TRENDS = new Set([
  'http_req_duration',
  'http_req_blocked',
  'http_req_connecting',
  'http_req_tls_handshaking',
  'http_req_sending',
  'http_req_waiting',
  'http_req_receiving',
  'iteration_duration',
  'group_duration',
  // loadtest/k6/run.ts: new Trend(name, true)
  'qs_request_duration',
  'qs_permit_wait',
]);

/**
 * Rate metrics and a series that counts the same samples under the same tags, so the
 * pooled rate is exact: http_req_failed is added once per request with http_reqs' tags;
 * run.ts adds qs_missing_branches once per request with qs_request_duration's tags.
 */
const RATE_WEIGHTS: Record<string, string> = {
  http_req_failed: k6Metrics.httpReqs,
  qs_missing_branches: 'k6_qs_request_duration_count',
};

export interface ParsedThreshold {
  /** The metric as written in the scenario, e.g. `qs_request_duration{traffic_class:interactive}`. */
  readonly metric: string;
  readonly expression: string;
  /** The k6 metric name without the sub-metric filter. */
  readonly name: string;
  /** The sub-metric's tag filter. */
  readonly tags: Readonly<Record<string, string>>;
  /** avg | min | max | med | count | rate | value | p(N). */
  readonly aggregation: string;
  readonly op: Operator;
  readonly limit: number;
}

const metricPattern = /^([a-zA-Z_][a-zA-Z0-9_]*)(?:\{(.*)\})?$/;
const expressionPattern = /^\s*(avg|min|max|med|count|rate|value|p\(\d+(?:\.\d+)?\))\s*(<=|>=|===|==|!=|<|>)\s*(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*$/i;
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Parses one threshold as k6 writes it: `metric{tag:value,…}` and `aggregation op number`. */
export function parseThreshold(metric: string, expression: string): ParsedThreshold {
  const m = metricPattern.exec(metric.trim());
  if (!m) throw new ThresholdError(`threshold ${metric}: not a k6 metric name (or sub-metric name{tag:value})`);
  const tags: Record<string, string> = {};
  for (const part of (m[2] ?? '').split(',').filter((p) => p.trim() !== '')) {
    const colon = part.indexOf(':');
    const key = part.slice(0, colon).trim();
    const value = part.slice(colon + 1).trim().replace(/^(["'])(.*)\1$/, '$2');
    if (colon < 0 || !labelName.test(key)) throw new ThresholdError(`threshold ${metric}: tag filter "${part}" is not tag:value`);
    tags[key] = value;
  }
  const e = expressionPattern.exec(expression);
  if (!e) throw new ThresholdError(`threshold ${metric}: "${expression}" is not "aggregation operator number" (e.g. p(95)<800)`);
  return { metric, expression, name: m[1], tags, aggregation: e[1].toLowerCase(), op: e[2] as Operator, limit: Number(e[3]) };
}

/** Every threshold of a k6 `thresholds` object, parsed. */
export function parseThresholds(thresholds: Readonly<Record<string, readonly string[]>>): ParsedThreshold[] {
  return Object.entries(thresholds).flatMap(([metric, expressions]) => expressions.map((x) => parseThreshold(metric, x)));
}

/** The trend stat a Prometheus series name carries: p(95) → p95, p(99.9) → p999 (as k6 names them). */
function statSuffix(aggregation: string): string {
  if (aggregation.startsWith('p(')) return `p${aggregation.slice(2, -1).replaceAll('.', '')}`;
  return aggregation;
}

/** The trend stats k6 must remote-write (K6_PROMETHEUS_RW_TREND_STATS) for these thresholds. */
export function trendStatsFor(thresholds: readonly ParsedThreshold[]): string[] {
  const stats = new Set<string>();
  for (const t of thresholds) {
    if (t.aggregation.startsWith('p(')) stats.add(t.aggregation);
    else if (t.aggregation === 'med') stats.add('med');
    else if (t.aggregation === 'avg') stats.add('avg').add('count');
    else if (t.aggregation === 'min' || t.aggregation === 'max') stats.add(t.aggregation);
  }
  // qs_missing_branches is weighted by qs_request_duration's count.
  if (thresholds.some((t) => RATE_WEIGHTS[t.name]?.endsWith('_count'))) stats.add('count');
  return [...stats];
}

/** The range a pooled figure lies in; low === high when it is exact. */
export interface Interval {
  readonly low: number;
  readonly high: number;
}

/** Where the pooled quantile (or unweighted mean) of disjoint parts lies: between their extremes. */
export function mixtureBounds(parts: readonly number[]): Interval {
  if (parts.length === 0) throw new RangeError('mixtureBounds needs at least one part');
  return { low: Math.min(...parts), high: Math.max(...parts) };
}

export type Judgement = 'pass' | 'fail' | 'unproven';

/** Whether every value of the interval passes `op limit` (pass), none does (fail), or some do (unproven). */
export function judge({ low, high }: Interval, op: Operator, limit: number): Judgement {
  const holds = (v: number): boolean => {
    switch (op) {
      case '<':
        return v < limit;
      case '<=':
        return v <= limit;
      case '>':
        return v > limit;
      case '>=':
        return v >= limit;
      case '==':
      case '===':
        return v === limit;
      case '!=':
        return v !== limit;
    }
  };
  if (op === '==' || op === '===') {
    if (low === high) return holds(low) ? 'pass' : 'fail';
    return limit < low || limit > high ? 'fail' : 'unproven';
  }
  if (op === '!=') {
    if (limit < low || limit > high) return 'pass';
    return low === high ? 'fail' : 'unproven';
  }
  const lowHolds = holds(low);
  const highHolds = holds(high);
  if (lowHolds && highHolds) return 'pass';
  if (!lowHolds && !highHolds) return 'fail';
  return 'unproven';
}

export interface ThresholdVerdict {
  readonly metric: string;
  readonly expression: string;
  readonly ok: boolean;
  /** The pooled figure in the threshold's unit (ms for time trends). */
  readonly observed: Interval | undefined;
  /** Prometheus series (runner × tag set) it was pooled from. */
  readonly series: number;
  readonly judgement: Judgement | 'no data';
}

export interface RunVerdict {
  readonly ok: boolean;
  readonly verdicts: readonly ThresholdVerdict[];
}

export const evaluationOptionsSchema = z.object({
  prometheusUrl: z.url({ protocol: /^https?$/ }),
  /** Labels every series of the run carries, e.g. { testid: 'run-42' }. */
  selector: z.record(z.string().regex(labelName, 'must be a Prometheus label name'), z.string()).refine((s) => Object.keys(s).length > 0, 'needs at least one label (e.g. testid) to pick the run'),
  /** The run window, epoch ms. */
  start: z.number().int().nonnegative(),
  end: z.number().int().nonnegative(),
}).refine((o) => o.end > o.start, { message: 'end must be after start', path: ['end'] });
export type EvaluationOptions = z.input<typeof evaluationOptionsSchema>;

const quote = (value: string): string => JSON.stringify(value);

function selectorText(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(',');
}

/** A stable key for a series' labels (without __name__), to pair two stats of one series. */
function seriesKey(metric: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(metric).filter(([k]) => k !== '__name__').sort(([a], [b]) => a.localeCompare(b)));
}

class RunMetrics {
  readonly #url: string;
  readonly #selector: string;
  readonly #end: number;
  readonly #window: string;
  readonly seconds: number;

  constructor(options: z.output<typeof evaluationOptionsSchema>) {
    this.#url = options.prometheusUrl.replace(/\/$/, '');
    this.#selector = selectorText(options.selector);
    this.#end = options.end;
    this.seconds = (options.end - options.start) / 1000;
    this.#window = `${Math.max(1, Math.ceil(this.seconds))}s`;
  }

  /** The last value in the run window of every series of `name` matching the tags. */
  last(name: string, tags: Readonly<Record<string, string>>): Promise<Sample[]> {
    const matchers = [this.#selector, selectorText(tags)].filter((s) => s !== '').join(',');
    return query(this.#url, `last_over_time(${name}{${matchers}}[${this.#window}])`, this.#end);
  }

  async has(name: string): Promise<boolean> {
    return ((await queryScalar(this.#url, `count(last_over_time(${name}{${this.#selector}}[${this.#window}]))`, this.#end)) ?? 0) > 0;
  }
}

type Pooled = { observed: Interval; series: number } | undefined;

const sum = (samples: readonly Sample[]): number => samples.reduce((s, x) => s + x.value, 0);

async function poolTrend(metrics: RunMetrics, t: ParsedThreshold): Promise<Pooled> {
  if (!TIME_TRENDS.has(t.name)) {
    throw new ThresholdError(`threshold ${t.metric}: ${t.name} is not a trend this evaluator knows (its unit in Prometheus is unknown)`);
  }
  const toMs = (seconds: number) => seconds * 1000;
  const base = `k6_${t.name}`;
  if (t.aggregation === 'avg') {
    const [avgs, counts] = await Promise.all([metrics.last(`${base}_avg`, t.tags), metrics.last(`${base}_count`, t.tags)]);
    if (avgs.length === 0) return undefined;
    const countOf = new Map(counts.map((c) => [seriesKey(c.metric), c.value]));
    if (avgs.every((a) => countOf.has(seriesKey(a.metric)))) {
      const total = avgs.reduce((s, a) => s + (countOf.get(seriesKey(a.metric)) ?? 0), 0);
      const mean = avgs.reduce((s, a) => s + a.value * (countOf.get(seriesKey(a.metric)) ?? 0), 0) / total;
      return { observed: { low: toMs(mean), high: toMs(mean) }, series: avgs.length };
    }
    const b = mixtureBounds(avgs.map((a) => a.value));
    return { observed: { low: toMs(b.low), high: toMs(b.high) }, series: avgs.length };
  }
  const parts = await metrics.last(`${base}_${statSuffix(t.aggregation)}`, t.tags);
  if (parts.length === 0) return undefined;
  const values = parts.map((p) => toMs(p.value));
  const value = t.aggregation === 'min' ? Math.min(...values) : t.aggregation === 'max' ? Math.max(...values) : undefined;
  return { observed: value === undefined ? mixtureBounds(values) : { low: value, high: value }, series: parts.length };
}

async function poolRate(metrics: RunMetrics, t: ParsedThreshold): Promise<Pooled> {
  const rates = await metrics.last(`k6_${t.name}_rate`, t.tags);
  if (rates.length === 0) return undefined;
  const weightName = RATE_WEIGHTS[t.name];
  if (weightName) {
    const weights = new Map((await metrics.last(weightName, t.tags)).map((w) => [seriesKey(w.metric), w.value]));
    if (rates.every((r) => weights.has(seriesKey(r.metric)))) {
      const total = rates.reduce((s, r) => s + (weights.get(seriesKey(r.metric)) ?? 0), 0);
      const rate = total === 0 ? 0 : rates.reduce((s, r) => s + r.value * (weights.get(seriesKey(r.metric)) ?? 0), 0) / total;
      return { observed: { low: rate, high: rate }, series: rates.length };
    }
  }
  return { observed: mixtureBounds(rates.map((r) => r.value)), series: rates.length };
}

async function poolCounter(metrics: RunMetrics, t: ParsedThreshold): Promise<Pooled> {
  const totals = await metrics.last(`k6_${t.name}_total`, t.tags);
  if (totals.length === 0) return undefined;
  const count = sum(totals);
  const value = t.aggregation === 'rate' ? count / metrics.seconds : count;
  return { observed: { low: value, high: value }, series: totals.length };
}

async function pool(metrics: RunMetrics, t: ParsedThreshold): Promise<Pooled> {
  switch (t.aggregation) {
    case 'count':
      return poolCounter(metrics, t);
    case 'rate':
      // A Counter's per-second rate or a Rate metric's share: Prometheus holds one of the two.
      return (await metrics.has(`k6_${t.name}_rate`)) ? poolRate(metrics, t) : poolCounter(metrics, t);
    case 'value':
      throw new ThresholdError(`threshold ${t.metric}: a Gauge is one value per runner; its fleet-wide value is undefined`);
    default:
      return poolTrend(metrics, t);
  }
}

/** Evaluates every threshold over the run's metrics in Prometheus. */
export async function evaluateThresholds(thresholds: Readonly<Record<string, readonly string[]>>, options: EvaluationOptions): Promise<RunVerdict> {
  const parsedOptions = evaluationOptionsSchema.safeParse(options);
  if (!parsedOptions.success) {
    const issue = parsedOptions.error.issues[0];
    throw new ThresholdError(`threshold evaluation: ${issue.path.join('.') || '(options)'}: ${issue.message}`);
  }
  const metrics = new RunMetrics(parsedOptions.data);
  const verdicts: ThresholdVerdict[] = [];
  for (const t of parseThresholds(thresholds)) {
    const pooled = await pool(metrics, t);
    const judgement = pooled ? judge(pooled.observed, t.op, t.limit) : 'no data';
    verdicts.push({ metric: t.metric, expression: t.expression, ok: judgement === 'pass', observed: pooled?.observed, series: pooled?.series ?? 0, judgement });
  }
  return { ok: verdicts.every((v) => v.ok), verdicts };
}

/** The times (epoch ms) of the raw samples of `selector` within `lookbackMs` before `now`. */
async function sampleTimes(prometheusUrl: string, selector: string, lookbackMs: number, now: number): Promise<number[]> {
  const params = new URLSearchParams({ query: `${selector}[${Math.ceil(lookbackMs / 1000)}s]`, time: String(now / 1000) });
  const res = await fetch(`${prometheusUrl.replace(/\/$/, '')}/api/v1/query?${params}`, { signal: AbortSignal.timeout(30_000) });
  const body = (await res.json()) as { status: string; error?: string; data?: { result: { values: [number, string][] }[] } };
  if (body.status !== 'success' || !body.data) throw new Error(`prometheus: ${body.error ?? res.status}`);
  return body.data.result.flatMap((s) => s.values.map(([t]) => t * 1000));
}

/**
 * The run's window from its own raw samples within `lookbackMs` before `now`: from the
 * first `k6_vus` sample (one series per runner) to the last `k6_iterations_total` one.
 * Every other sample of an iteration is taken before the iteration ends, and a runner's
 * final push can come after its last `k6_vus` sample.
 */
export async function findRunWindow(prometheusUrl: string, selector: Readonly<Record<string, string>>, lookbackMs: number, now = Date.now()): Promise<{ start: number; end: number } | undefined> {
  const labels = selectorText(selector);
  const [vus, iterations] = await Promise.all([
    sampleTimes(prometheusUrl, `k6_vus{${labels}}`, lookbackMs, now),
    sampleTimes(prometheusUrl, `k6_iterations_total{${labels}}`, lookbackMs, now),
  ]);
  if (vus.length === 0) return undefined;
  return { start: Math.floor(Math.min(...vus)), end: Math.ceil(Math.max(...vus, ...iterations)) };
}

const formatNumber = (n: number): string => (Number.isInteger(n) ? String(n) : n.toPrecision(4));

/** One line per threshold: ✓/✗, the threshold, the pooled figure and how it was judged. */
export function formatVerdicts(verdict: RunVerdict): string {
  const lines = verdict.verdicts.map((v) => {
    const observed = v.observed === undefined ? 'no samples in Prometheus' : v.observed.low === v.observed.high ? formatNumber(v.observed.low) : `between ${formatNumber(v.observed.low)} and ${formatNumber(v.observed.high)}`;
    const how = v.judgement === 'unproven' ? ' (the runners\u2019 values straddle the limit: not proven)' : '';
    return `${v.ok ? '\u2713' : '\u2717'} ${v.metric}: ${v.expression}  observed ${observed} over ${v.series} series${how}`;
  });
  lines.push(verdict.ok ? 'thresholds: all passed' : 'thresholds: FAILED');
  return lines.join('\n');
}
