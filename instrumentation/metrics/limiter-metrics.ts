// The limiter metrics defined in ./definitions.ts as prom-client instruments on a caller's registry.
// One LimiterMetrics per registry: several wrappers (one per model and quota) share it and
// are told apart by the `limiter` label. Gauges are read at scrape time from each
// wrapper's snapshot, and the busiest counters are tallied as plain numbers on the hot path
// (`tally()`) and added to prom-client when it collects (every read goes through collect), so
// an uncontended call does not pay prom-client's label hashing for them.
//
// Exemplars (trace ids on histogram observations) need an OpenMetrics registry, set before
// the first wrapper is created on it (`registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE)`)
// and served with that content type.
import promClient, {
  Counter,
  Gauge,
  Histogram,
  type OpenMetricsContentType,
  type PrometheusContentType,
  type Registry,
} from 'prom-client';
import { ACQUIRE_SECONDS_BUCKETS, acquireSecondsBuckets, limiterMetrics } from './definitions.ts';

/** What the gauges read from one wrapper at scrape time. */
export interface LimiterGaugeSource {
  readonly name: string;
  snapshot(): {
    permitsInUse: number;
    permitsLimit: number;
    waiting: number;
    budgetAvailable: number | undefined;
    budgetCapacity: number | undefined;
    /** Tokens in the budget's rolling minute; undefined without a rolling-minute guard. */
    budgetWindowTokens?: number | undefined;
    /** Tokens the budget admits per window now (its window limit). */
    budgetWindowLimit?: number | undefined;
    /** The wrapper's maxWait in seconds. */
    maxWaitSeconds?: number | undefined;
    /** How long the oldest request at the door has waited, seconds. */
    doorOldestWaitSeconds?: number | undefined;
  };
}

/** A prom-client registry of either content type. */
export type AnyRegistry = Registry<PrometheusContentType> | Registry<OpenMetricsContentType>;

/**
 * One counter series incremented on the hot path as a plain number and added to its
 * prom-client counter when that counter is collected (scrape, `get()`, `metrics()`).
 */
export class CounterTally {
  readonly labels: Record<string, string>;
  #pending = 0;
  #touched = false;
  /** A cumulative source read at collect time (its growth since the last read is added). */
  readonly #pull: (() => number) | undefined;
  #pulled = 0;

  constructor(labels: Record<string, string>, pull?: () => number) {
    this.labels = labels;
    this.#pull = pull;
  }

  add(value = 1): void {
    // The same checks prom-client makes, at the same moment (the call, not the scrape).
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    if (value < 0) throw new Error('It is not possible to decrease a counter');
    this.#pending += value;
    this.#touched = true;
  }

  /** Move the pending amount into the counter (creating the series even for 0, as inc would). */
  flushInto(counter: Counter<string>): void {
    if (this.#pull) {
      const total = this.#pull();
      if (total > this.#pulled) this.#pending += total - this.#pulled;
      this.#pulled = total;
    }
    if (!this.#touched && !this.#pull) return;
    counter.inc(this.labels, this.#pending);
    this.#pending = 0;
    this.#touched = false;
  }
}

type TalliedCounter = 'tokensReserved' | 'tokensActual' | 'calls' | 'permitSeconds';

const byRegistry = new WeakMap<object, LimiterMetrics>();

/** The limiter metrics registered on `registry` (created on first use, then shared). */
export function createLimiterMetrics(registry: AnyRegistry = promClient.register): LimiterMetrics {
  let metrics = byRegistry.get(registry);
  if (!metrics) {
    metrics = new LimiterMetrics(registry);
    byRegistry.set(registry, metrics);
  }
  return metrics;
}

type Labels<K extends keyof typeof limiterMetrics> = (typeof limiterMetrics)[K]['labelNames'][number];

export class LimiterMetrics {
  readonly registry: AnyRegistry;
  /** True when the registry speaks OpenMetrics, so histogram exemplars are kept and served. */
  readonly exemplars: boolean;
  readonly callDuration: Histogram<Labels<'callDuration'>>;
  readonly tokensReserved: Counter<Labels<'tokensReserved'>>;
  readonly tokensActual: Counter<Labels<'tokensActual'>>;
  readonly rateLimited: Counter<Labels<'rateLimited'>>;
  readonly retries: Counter<Labels<'retries'>>;
  readonly timeouts: Counter<Labels<'timeouts'>>;
  readonly calls: Counter<Labels<'calls'>>;
  readonly permitsReclaimed: Counter<Labels<'permitsReclaimed'>>;
  readonly permitSeconds: Counter<Labels<'permitSeconds'>>;
  readonly budgetCentralUnavailable: Counter<Labels<'budgetCentralUnavailable'>>;
  readonly requests: Counter<Labels<'requests'>>;
  readonly requestAdmission: Histogram<Labels<'requestAdmission'>>;
  readonly wastedTokens: Counter<Labels<'wastedTokens'>>;
  readonly requestDeadline: Gauge<Labels<'requestDeadline'>>;
  readonly #sources = new Set<LimiterGaugeSource>();
  readonly #registers: Registry[];
  #acquireDuration: Histogram<Labels<'acquireDuration'>> | undefined;
  #acquireBuckets: readonly number[] = ACQUIRE_SECONDS_BUCKETS;
  readonly #tallies = new Map<string, CounterTally[]>();

  constructor(registry: AnyRegistry) {
    this.registry = registry;
    this.exemplars = (registry.contentType as string) === promClient.Registry.OPENMETRICS_CONTENT_TYPE;
    const registers = [registry as Registry];
    this.#registers = registers;
    const tallies = this.#tallies;
    const counter = <K extends keyof typeof limiterMetrics>(key: K) => {
      const d = limiterMetrics[key];
      const own: CounterTally[] = [];
      tallies.set(key, own);
      return new Counter<Labels<K>>({
        name: d.name,
        help: d.help,
        labelNames: d.labelNames,
        registers,
        collect() {
          for (const tally of own) tally.flushInto(this);
        },
      });
    };
    const histogram = <K extends 'callDuration' | 'requestAdmission'>(key: K, enableExemplars: boolean) => {
      const d = limiterMetrics[key];
      return new Histogram<Labels<K>>({ name: d.name, help: d.help, labelNames: d.labelNames, buckets: [...d.buckets], registers, enableExemplars });
    };
    this.callDuration = histogram('callDuration', this.exemplars);
    const sources = this.#sources;
    const gauge = (key: 'permitsInUse' | 'permitsLimit' | 'waitingCalls' | 'budgetAvailable' | 'budgetCapacity' | 'budgetWindowLimit' | 'budgetWindow' | 'maxWait' | 'doorOldestWait',
      read: (s: ReturnType<LimiterGaugeSource['snapshot']>) => number | undefined) => {
      const d = limiterMetrics[key];
      return new Gauge<'limiter'>({
        name: d.name,
        help: d.help,
        labelNames: d.labelNames,
        registers,
        collect() {
          this.reset();
          for (const source of sources) {
            const value = read(source.snapshot());
            if (value !== undefined) this.set({ limiter: source.name }, value);
          }
        },
      });
    };
    gauge('permitsInUse', (s) => s.permitsInUse);
    gauge('permitsLimit', (s) => s.permitsLimit);
    gauge('waitingCalls', (s) => s.waiting);
    gauge('budgetAvailable', (s) => s.budgetAvailable);
    gauge('budgetCapacity', (s) => s.budgetCapacity);
    gauge('budgetWindowLimit', (s) => s.budgetWindowLimit);
    gauge('budgetWindow', (s) => s.budgetWindowTokens);
    gauge('maxWait', (s) => s.maxWaitSeconds);
    gauge('doorOldestWait', (s) => s.doorOldestWaitSeconds);
    this.tokensReserved = counter('tokensReserved');
    this.tokensActual = counter('tokensActual');
    this.rateLimited = counter('rateLimited');
    this.retries = counter('retries');
    this.timeouts = counter('timeouts');
    this.calls = counter('calls');
    this.permitsReclaimed = counter('permitsReclaimed');
    this.permitSeconds = counter('permitSeconds');
    this.budgetCentralUnavailable = counter('budgetCentralUnavailable');
    this.requests = counter('requests');
    this.wastedTokens = counter('wastedTokens');
    this.requestAdmission = histogram('requestAdmission', false);
    const g = limiterMetrics.requestDeadline;
    this.requestDeadline = new Gauge<Labels<'requestDeadline'>>({ name: g.name, help: g.help, labelNames: g.labelNames, registers });
  }

  /**
   * The acquire-time histogram. Its buckets are fixed when it is first used: by the first
   * wrapper's maxWait (useMaxWait), else the default buckets.
   */
  get acquireDuration(): Histogram<Labels<'acquireDuration'>> {
    if (!this.#acquireDuration) {
      const d = limiterMetrics.acquireDuration;
      this.#acquireDuration = new Histogram<Labels<'acquireDuration'>>({
        name: d.name,
        help: d.help,
        labelNames: d.labelNames,
        buckets: [...this.#acquireBuckets],
        registers: this.#registers,
        enableExemplars: this.exemplars,
      });
    }
    return this.#acquireDuration;
  }

  /** The acquire-time bucket bounds in use (or to be used), seconds. */
  get acquireBuckets(): readonly number[] {
    return this.#acquireBuckets;
  }

  /**
   * Make the acquire-time buckets end just above `maxWaitSeconds`, so no quantile can
   * interpolate past what a wait can last. Only the first wrapper on a registry sets them
   * (a histogram's buckets cannot change once it exists); returns false, with a process
   * warning, when a later wrapper's maxWait is not one of the bounds.
   */
  useMaxWait(limiter: string, maxWaitSeconds: number): boolean {
    if (!this.#acquireDuration && this.#acquireBuckets === ACQUIRE_SECONDS_BUCKETS) {
      this.#acquireBuckets = acquireSecondsBuckets(maxWaitSeconds);
      return true;
    }
    if (this.#acquireBuckets.includes(maxWaitSeconds)) return true;
    process.emitWarning(
      `limiter "${limiter}": maxWait ${maxWaitSeconds} s is not an acquire-time bucket bound on this registry (buckets were set for another maxWait: ${this.#acquireBuckets.at(-1)} s is the last); its acquire quantiles may read above its maxWait. Give limiters with different maxWait their own registry.`,
      { code: 'QUOTASCOPE_ACQUIRE_BUCKETS' },
    );
    return false;
  }

  /** Report a wrapper's gauges at every scrape until the returned function is called. */
  addSource(source: LimiterGaugeSource): () => void {
    this.#sources.add(source);
    return () => this.#sources.delete(source);
  }

  /**
   * A hot-path series of one of the tallied counters. Create it once per label set and keep
   * it: every tally is flushed at every collect for the life of the registry.
   */
  tally(key: TalliedCounter, labels: Record<string, string>, pull?: () => number): CounterTally {
    const tally = new CounterTally(labels, pull);
    this.#tallies.get(key)?.push(tally);
    return tally;
  }

  /** Observe a histogram value, with the trace as exemplar when there is one and the registry keeps them. */
  observe<L extends string>(
    histogram: Histogram<L>,
    labels: Partial<Record<L, string>>,
    value: number,
    trace?: { traceId: string; spanId: string },
  ): void {
    if (this.exemplars && trace) {
      histogram.observe({ labels, value, exemplarLabels: { trace_id: trace.traceId, span_id: trace.spanId } as never });
    } else {
      histogram.observe(labels, value);
    }
  }
}
