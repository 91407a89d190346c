// The live state of one mock provider: the current configuration (with timeline steps applied
// as they come due), quotas, the seeded random stream and the metrics.
import { type MockConfig, type TimelineStep, mergeConfig } from './config.ts';
import { createMockMetrics, type MockMetrics, type QuotaFigures } from './metrics.ts';
import { type Clock, QuotaBook } from './quota.ts';
import { createRandom, type Random } from './random.ts';

export class MockState {
  readonly clock: Clock;
  readonly quota: QuotaBook;
  readonly metrics: MockMetrics;
  /** Throttling, fault and sampling draws, in request order: a sequential run repeats exactly. */
  random: Random;
  #config: MockConfig;
  #steps: TimelineStep[] = [];
  #timelineStartMs = 0;
  #nextStep = 0;

  constructor(config: MockConfig, clock: Clock) {
    this.clock = clock;
    this.#config = config;
    this.quota = new QuotaBook(clock);
    this.quota.reset(config.quotaWindow, config.quotaWindowMs);
    this.random = createRandom(config.seed);
    this.metrics = createMockMetrics(() => this.#quotaFigures());
    this.#startTimeline();
  }

  /** The configuration in force now (timeline steps that are due get applied first). */
  get config(): MockConfig {
    if (this.#nextStep < this.#steps.length) this.#applyDueSteps();
    return this.#config;
  }

  /** Seconds since the timeline started. */
  get timelineSeconds(): number {
    return (this.clock.now() - this.#timelineStartMs) / 1000;
  }

  /** Merges a partial config (validated; throws ConfigError and changes nothing on bad input). */
  update(patch: unknown): MockConfig {
    const next = mergeConfig(this.config, patch);
    const seedChanged = next.seed !== this.#config.seed;
    this.#config = next;
    if (seedChanged) this.random = createRandom(next.seed);
    if (typeof patch === 'object' && patch !== null && 'timeline' in patch) this.#startTimeline();
    return this.config;
  }

  /** Forgets quota usage and metric values, reseeds, and restarts the timeline from 0 s. */
  reset(): void {
    this.quota.reset(this.#config.quotaWindow, this.#config.quotaWindowMs);
    this.metrics.registry.resetMetrics();
    this.random = createRandom(this.#config.seed);
    this.#startTimeline();
  }

  #startTimeline(): void {
    this.#steps = [...this.#config.timeline].sort((a, b) => a.at - b.at);
    this.#timelineStartMs = this.clock.now();
    this.#nextStep = 0;
  }

  #applyDueSteps(): void {
    const elapsed = this.timelineSeconds;
    while (this.#nextStep < this.#steps.length && this.#steps[this.#nextStep].at <= elapsed) {
      const step = this.#steps[this.#nextStep++];
      this.#config = mergeConfig(this.#config, step.set);
    }
  }

  #quotaFigures(): QuotaFigures {
    const config = this.config;
    return {
      used: this.quota.peakUsage(config),
      limit: {
        requests_per_minute: config.requestsPerMinute,
        tokens_per_minute: config.tokensPerMinute,
        requests_per_day: config.requestsPerDay,
        concurrent: config.maxConcurrent,
      },
      keys: this.quota.keyCount,
    };
  }
}
