// Samples a gauge (summed over every /metrics URL given) at RANDOM times during a run.
// Why random: k6's arrival-rate executors start requests on an exact period (120/min = every
// 500 ms) and Prometheus scrapes on an exact period too (1 s), so every scrape lands on the
// same phase of the request cycle and the scraped mean of llm_limiter_permits_in_use can be
// off by 20 % or more (measured 5.0 where the true time average was 4.1). Samples taken at
// uniformly jittered times see the time average (no fixed phase to lock onto).
import { sumOfMetric } from './prometheus-text.ts';

export interface ProbeSample {
  /** epoch ms */
  at: number;
  value: number;
}

export interface GaugeProbeOptions {
  /** Prometheus text endpoints, e.g. http://127.0.0.1:8080/metrics (one per replica). */
  urls: string[];
  /** Metric name; every series of it (all label values) is summed. */
  metric: string;
  /** Mean gap between samples, ms (each gap is uniform in [0.5, 1.5] x this). */
  meanIntervalMs?: number;
  random?: () => number;
}

export class GaugeProbe {
  readonly samples: ProbeSample[] = [];
  readonly #options: Required<GaugeProbeOptions>;
  #running = false;
  #loop: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;

  constructor(options: GaugeProbeOptions) {
    if (options.urls.length === 0) throw new Error('GaugeProbe: urls must list at least one /metrics URL');
    this.#options = { meanIntervalMs: 100, random: Math.random, ...options };
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#wake?.();
    await this.#loop;
  }

  /** Mean of the samples taken in [start, end] (epoch ms); undefined without samples. */
  meanBetween(start: number, end: number): number | undefined {
    const inWindow = this.samples.filter((s) => s.at >= start && s.at <= end);
    if (inWindow.length === 0) return undefined;
    return inWindow.reduce((sum, s) => sum + s.value, 0) / inWindow.length;
  }

  async #run(): Promise<void> {
    const { urls, metric, meanIntervalMs, random } = this.#options;
    while (this.#running) {
      const at = Date.now();
      try {
        const texts = await Promise.all(urls.map(async (u) => (await fetch(u, { signal: AbortSignal.timeout(2000) })).text()));
        this.samples.push({ at, value: texts.reduce((sum, t) => sum + sumOfMetric(t, metric), 0) });
      } catch {
        // A replica that does not answer this once is skipped: a partial sum would bias the mean.
      }
      if (!this.#running) break;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        this.#timer = setTimeout(resolve, meanIntervalMs * (0.5 + random()));
      });
    }
  }
}
