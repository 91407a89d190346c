// The Mock provider dashboard: the oracle's view. Quota used against its limits, the 429s
// it answered and why, the latency it served and the faults it injected.
import { type DashboardsConfig, selectorsOf } from '../config.ts';
import { mock } from '../metrics.ts';
import { quantile, series, sumOf, sumRate } from '../promql.ts';
import { joinSelectors } from '../selector.ts';
import type { DashboardSpec } from './spec.ts';
import { limiterVariables } from './variables.ts';

const ri = '$__rate_interval';

function usedVsLimit(s: string, quota: string): { expr: string; legend: string }[] {
  return [
    { expr: `max(${series(mock.quotaUsed, joinSelectors(s, `quota="${quota}"`))})`, legend: 'used' },
    { expr: `max(${series(mock.quotaLimit, joinSelectors(s, `quota="${quota}"`))})`, legend: 'limit' },
  ];
}

/** Null when the stack has no mock provider (config selectors.mockProvider: null). */
export function buildMockProviderDashboard(config: DashboardsConfig): DashboardSpec | null {
  const sel = selectorsOf(config);
  if (sel.mockScrape === null) return null;
  const s = sel.mockDashboard;
  return {
    uid: 'quotascope-mock-provider',
    title: 'quotascope / Mock provider',
    description: 'The mock provider: quota windows, 429s by reason, latency served and faults injected.',
    tags: ['quotascope', 'mock-provider'],
    variables: [
      { name: 'job', label: 'Job', metric: mock.requests, labelName: 'job', selector: sel.mockScrape! },
      { name: 'instance', label: 'Instance', metric: mock.requests, labelName: 'instance', selector: joinSelectors(sel.mockScrape!, 'job=~"$job"') },
      // limiter and agent: kept for links from the other dashboards (they carry them along), listed from the agent scrape.
      ...limiterVariables(sel).filter((v) => v.name === 'limiter' || v.name === 'agent').map((v) => ({ ...v, selector: sel.agentScrape })),
    ],
    rows: [
      {
        title: 'Quota',
        panels: [
          {
            key: 'quota-utilisation',
            title: 'Quota used / limit by window',
            description: "Usage of the current quota window divided by its limit, per quota. At 100 % the provider answers 429.",
            unit: 'percentunit',
            kind: 'timeseries',
            min: 0,
            thresholds: [
              { value: 0.9, color: 'orange' },
              { value: 1, color: 'red' },
            ],
            targets: [
              {
                expr: `max by (quota) (${series(mock.quotaUsed, s)}) / max by (quota) (${series(mock.quotaLimit, s)})`,
                legend: '{{quota}}',
              },
            ],
          },
          {
            key: 'quota-tokens',
            title: 'Tokens per minute: used vs limit',
            description: 'Tokens counted in the current per-minute window against the tokens-per-minute quota.',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: usedVsLimit(s, 'tokens_per_minute'),
          },
          {
            key: 'quota-requests',
            title: 'Requests per minute: used vs limit',
            description: 'Requests counted in the current per-minute window against the requests-per-minute quota.',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: usedVsLimit(s, 'requests_per_minute'),
          },
          {
            key: 'rate-limited-by-reason',
            title: '429s by reason',
            description: 'Rate-limit answers per second by the quota that tripped (or random throttling), per API.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(mock.rateLimited, s, ri, ['api', 'reason']), legend: '{{api}} {{reason}}' }],
            quietRunEmpty: 'the counter has no series until the provider answers 429, which a run within the quota never causes',
          },
        ],
      },
      {
        title: 'Traffic and latency',
        panels: [
          {
            key: 'requests-by-status',
            title: 'Requests by API and status',
            description: 'Requests served per second by wire format (gemini, openai) and HTTP status.',
            unit: 'reqps',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(mock.requests, s, ri, ['api', 'status']), legend: '{{api}} {{status}}' }],
          },
          {
            key: 'tokens-served',
            title: 'Tokens served by type',
            description: 'Input and output tokens per second the provider counted.',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(mock.tokens, s, ri, ['type']), legend: '{{type}}' }],
          },
          {
            key: 'in-flight',
            title: 'Requests in flight',
            description: 'Requests the provider is serving right now (compare with the limiter permits in use).',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumOf(mock.inFlight, s), legend: 'in flight' }],
          },
          {
            key: 'latency-served',
            title: 'Latency served p50 / p95 and time to first token p95',
            description: 'Request duration the provider served by API, and time to the first streamed token.',
            unit: 's',
            kind: 'timeseries',
            min: 0,
            targets: [
              { expr: quantile(0.5, mock.requestDuration, s, ri, ['api']), legend: '{{api}} p50' },
              { expr: quantile(0.95, mock.requestDuration, s, ri, ['api']), legend: '{{api}} p95' },
              { expr: quantile(0.95, mock.timeToFirstToken, s, ri, ['api']), legend: '{{api}} TTFT p95' },
            ],
          },
          {
            key: 'faults',
            title: 'Faults injected',
            description: 'Faults per second by kind: http_500, http_503, stream_error, connection_reset, stall.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(mock.faults, s, ri, ['fault']), legend: '{{fault}}' }],
            quietRunEmpty: 'no faults are injected unless the configuration sets fault probabilities',
          },
        ],
      },
    ],
  };
}
