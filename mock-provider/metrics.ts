// The mock provider's Prometheus metrics (the dashboards query them by these names).
// Each server gets its own Registry so several mocks can run in one process (tests).
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { QuotaName } from './quota.ts';

export type ApiName = 'gemini' | 'openai';
export type FaultName = 'http_500' | 'http_503' | 'stream_error' | 'connection_reset' | 'stall';
export type RateLimitReason = QuotaName | 'random';

const QUOTAS: readonly QuotaName[] = ['requests_per_minute', 'tokens_per_minute', 'requests_per_day', 'concurrent'];

export interface QuotaFigures {
  used: Record<QuotaName, number>;
  /** null: that quota is off. */
  limit: Record<QuotaName, number | null>;
  /** API keys whose quota state is kept (at most MAX_QUOTA_KEYS). */
  keys: number;
}

export interface MockMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'api' | 'model' | 'status'>;
  readonly tokens: Counter<'type'>;
  readonly rateLimited: Counter<'api' | 'reason'>;
  readonly inFlight: Gauge;
  readonly requestDuration: Histogram<'api'>;
  readonly timeToFirstToken: Histogram<'api'>;
  readonly faults: Counter<'fault'>;
  readonly incompleteRequests: Counter<'api'>;
}

const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 6, 8, 10, 15, 20, 30, 60, 120];

/** `readQuota` is called at each scrape, so the quota gauges are always current. */
export function createMockMetrics(readQuota: () => QuotaFigures): MockMetrics {
  const registry = new Registry();
  const registers = [registry];
  // Registered first, so its collect() runs before either gauge is serialized.
  const limit = new Gauge({
    name: 'mock_provider_quota_limit',
    help: 'Configured limit of each quota (absent when that quota is off)',
    labelNames: ['quota'],
    registers: [], // registered below, after `used`
  });
  const used = new Gauge({
    name: 'mock_provider_quota_used',
    help: "Current window's usage of each quota (the API key closest to its limit); concurrent = requests in flight",
    labelNames: ['quota'],
    registers,
    collect() {
      const figures = readQuota();
      this.reset();
      limit.reset();
      for (const quota of QUOTAS) {
        this.set({ quota }, figures.used[quota]);
        const value = figures.limit[quota];
        if (value !== null) limit.set({ quota }, value);
      }
    },
  });
  void used;
  registry.registerMetric(limit);
  new Gauge({
    name: 'mock_provider_quota_keys',
    help: 'API keys whose quota state the mock keeps (bounded; a key whose usage is back to zero is forgotten)',
    registers,
    collect() {
      this.set(readQuota().keys);
    },
  });
  return {
    registry,
    requests: new Counter({
      name: 'mock_provider_requests_total',
      help: 'Requests answered, by API, model and HTTP status',
      labelNames: ['api', 'model', 'status'],
      registers,
    }),
    tokens: new Counter({
      name: 'mock_provider_tokens_total',
      help: 'Tokens served: input (counted from admitted requests) and output (generated)',
      labelNames: ['type'],
      registers,
    }),
    rateLimited: new Counter({
      name: 'mock_provider_rate_limited_total',
      help: '429 answers by API and reason: the quota that was exceeded, or random throttling below quota',
      labelNames: ['api', 'reason'],
      registers,
    }),
    inFlight: new Gauge({
      name: 'mock_provider_in_flight_requests',
      help: 'Model requests being answered right now',
      registers,
    }),
    requestDuration: new Histogram({
      name: 'mock_provider_request_duration_seconds',
      help: 'Time from request received to response end, by API',
      labelNames: ['api'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    timeToFirstToken: new Histogram({
      name: 'mock_provider_time_to_first_token_seconds',
      help: 'Time from request received to the first output token sent, by API',
      labelNames: ['api'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    faults: new Counter({
      name: 'mock_provider_faults_total',
      help: 'Injected faults: http_500, http_503, stream_error, connection_reset, stall',
      labelNames: ['fault'],
      registers,
    }),
    incompleteRequests: new Counter({
      name: 'mock_provider_incomplete_requests_total',
      help: 'Requests whose client went away before sending the whole body, by API (not answered, not in requests_total)',
      labelNames: ['api'],
      registers,
    }),
  };
}
