// The mock provider's Prometheus metrics: their definitions (names, help, labels, buckets),
// which the dashboards import, and the prom-client metrics built from them.
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

const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 6, 8, 10, 15, 20, 30, 60, 120] as const;

/** The mock's metric definitions: the one place their names are written (dashboards import them). */
export const mockProviderMetrics = {
  requests: {
    name: 'mock_provider_requests_total',
    help: 'Requests answered, by API, model and HTTP status',
    type: 'counter',
    labelNames: ['api', 'model', 'status'],
  },
  tokens: {
    name: 'mock_provider_tokens_total',
    help: 'Tokens served: input (counted from admitted requests) and output (generated)',
    type: 'counter',
    labelNames: ['type'],
  },
  quotaUsed: {
    name: 'mock_provider_quota_used',
    help: "Current window's usage of each quota (the quota, per API key and model or per key, closest to its limit); concurrent = requests in flight",
    type: 'gauge',
    labelNames: ['quota'],
  },
  quotaLimit: {
    name: 'mock_provider_quota_limit',
    help: 'Configured limit of each quota (absent when that quota is off); per-minute quotas: the limit of the quota closest to it',
    type: 'gauge',
    labelNames: ['quota'],
  },
  rateLimited: {
    name: 'mock_provider_rate_limited_total',
    help: '429 answers by API and reason: the quota that was exceeded, or random throttling below quota',
    type: 'counter',
    labelNames: ['api', 'reason'],
  },
  inFlight: {
    name: 'mock_provider_in_flight_requests',
    help: 'Model requests being answered right now',
    type: 'gauge',
    labelNames: [],
  },
  requestDuration: {
    name: 'mock_provider_request_duration_seconds',
    help: 'Time from request received to response end, by API',
    type: 'histogram',
    labelNames: ['api'],
    buckets: LATENCY_BUCKETS,
  },
  timeToFirstToken: {
    name: 'mock_provider_time_to_first_token_seconds',
    help: 'Time from request received to the first output token sent, by API',
    type: 'histogram',
    labelNames: ['api'],
    buckets: LATENCY_BUCKETS,
  },
  faults: {
    name: 'mock_provider_faults_total',
    help: 'Injected faults: http_500, http_503, stream_error, connection_reset, stall',
    type: 'counter',
    labelNames: ['fault'],
  },
  incompleteRequests: {
    name: 'mock_provider_incomplete_requests_total',
    help: 'Requests whose client went away before sending the whole body, by API (not answered, not in requests_total)',
    type: 'counter',
    labelNames: ['api'],
  },
} as const;

/** `readQuota` is called at each scrape, so the quota gauges are always current. */
export function createMockMetrics(readQuota: () => QuotaFigures): MockMetrics {
  const d = mockProviderMetrics;
  const registry = new Registry();
  const registers = [registry];
  const histogram = (def: typeof d.requestDuration | typeof d.timeToFirstToken) =>
    new Histogram({ name: def.name, help: def.help, labelNames: [...def.labelNames], buckets: [...def.buckets], registers });
  // Registered first, so its collect() runs before either gauge is serialized.
  const limit = new Gauge({
    name: d.quotaLimit.name,
    help: d.quotaLimit.help,
    labelNames: [...d.quotaLimit.labelNames],
    registers: [], // registered below, after `used`
  });
  const used = new Gauge({
    name: d.quotaUsed.name,
    help: d.quotaUsed.help,
    labelNames: [...d.quotaUsed.labelNames],
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
    requests: new Counter({ name: d.requests.name, help: d.requests.help, labelNames: [...d.requests.labelNames], registers }),
    tokens: new Counter({ name: d.tokens.name, help: d.tokens.help, labelNames: [...d.tokens.labelNames], registers }),
    rateLimited: new Counter({ name: d.rateLimited.name, help: d.rateLimited.help, labelNames: [...d.rateLimited.labelNames], registers }),
    inFlight: new Gauge({ name: d.inFlight.name, help: d.inFlight.help, registers }),
    requestDuration: histogram(d.requestDuration),
    timeToFirstToken: histogram(d.timeToFirstToken),
    faults: new Counter({ name: d.faults.name, help: d.faults.help, labelNames: [...d.faults.labelNames], registers }),
    incompleteRequests: new Counter({ name: d.incompleteRequests.name, help: d.incompleteRequests.help, labelNames: [...d.incompleteRequests.labelNames], registers }),
  };
}
