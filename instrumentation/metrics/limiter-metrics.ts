// The limiter metrics of DESIGN.md as prom-client instruments on a caller's registry.
// One LimiterMetrics per registry: several wrappers (one per model and quota) share it and
// are told apart by the `limiter` label. Gauges are read at scrape time from each
// wrapper's snapshot, so the hot path only touches counters and histograms.
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
import { limiterMetrics } from './definitions.ts';

/** What the gauges read from one wrapper at scrape time. */
export interface LimiterGaugeSource {
  readonly name: string;
  snapshot(): {
    permitsInUse: number;
    permitsLimit: number;
    waiting: number;
    budgetAvailable: number | undefined;
    budgetCapacity: number | undefined;
  };
}

/** A prom-client registry of either content type. */
export type AnyRegistry = Registry<PrometheusContentType> | Registry<OpenMetricsContentType>;

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
  readonly acquireDuration: Histogram<Labels<'acquireDuration'>>;
  readonly callDuration: Histogram<Labels<'callDuration'>>;
  readonly tokensReserved: Counter<Labels<'tokensReserved'>>;
  readonly tokensActual: Counter<Labels<'tokensActual'>>;
  readonly rateLimited: Counter<Labels<'rateLimited'>>;
  readonly retries: Counter<Labels<'retries'>>;
  readonly timeouts: Counter<Labels<'timeouts'>>;
  readonly calls: Counter<Labels<'calls'>>;
  readonly permitsReclaimed: Counter<Labels<'permitsReclaimed'>>;
  readonly #sources = new Set<LimiterGaugeSource>();

  constructor(registry: AnyRegistry) {
    this.registry = registry;
    this.exemplars = (registry.contentType as string) === promClient.Registry.OPENMETRICS_CONTENT_TYPE;
    const registers = [registry as Registry];
    const counter = <K extends keyof typeof limiterMetrics>(key: K) => {
      const d = limiterMetrics[key];
      return new Counter<Labels<K>>({ name: d.name, help: d.help, labelNames: d.labelNames, registers });
    };
    const histogram = <K extends 'acquireDuration' | 'callDuration'>(key: K) => {
      const d = limiterMetrics[key];
      return new Histogram<Labels<K>>({
        name: d.name,
        help: d.help,
        labelNames: d.labelNames,
        buckets: [...d.buckets],
        registers,
        enableExemplars: this.exemplars,
      });
    };
    const sources = this.#sources;
    const gauge = (key: 'permitsInUse' | 'permitsLimit' | 'waitingCalls' | 'budgetAvailable' | 'budgetCapacity',
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
    this.acquireDuration = histogram('acquireDuration');
    this.callDuration = histogram('callDuration');
    this.tokensReserved = counter('tokensReserved');
    this.tokensActual = counter('tokensActual');
    this.rateLimited = counter('rateLimited');
    this.retries = counter('retries');
    this.timeouts = counter('timeouts');
    this.calls = counter('calls');
    this.permitsReclaimed = counter('permitsReclaimed');
  }

  /** Report a wrapper's gauges at every scrape until the returned function is called. */
  addSource(source: LimiterGaugeSource): () => void {
    this.#sources.add(source);
    return () => this.#sources.delete(source);
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
