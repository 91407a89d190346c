// The verdict on a finished run beyond k6's thresholds: a run whose user requests ALL failed
// measured nothing about the limiter, so it fails (exit 1) and says what it saw: the HTTP
// statuses the requests ended with and, where the stack has a mock provider, what the
// provider answered the model calls.
import { mock } from '../../dashboards/config.ts';
import type { K6Summary } from '../k6/runner.ts';
import { formatStatusCounts } from '../k6/summary-text.ts';
import { query } from './prometheus-client.ts';

/** Exit code of a run whose every request failed. */
export const ALL_FAILED_EXIT_CODE = 1;

/** The one-line reason a run failed as a whole, or undefined when some request succeeded (or none ran). */
export function allFailedMessage(summary: K6Summary | undefined, providerStatuses?: Record<string, number>): string | undefined {
  if (!summary || summary.requests === 0 || summary.failedRequests < summary.requests) return undefined;
  const statuses = Object.keys(summary.statusCodes);
  const answered = statuses.length > 0 && statuses.every((s) => s.startsWith('2'));
  const provider = providerStatuses && Object.keys(providerStatuses).length > 0 ? `; the provider answered the model calls ${formatStatusCounts(providerStatuses)}` : '';
  return (
    `all ${summary.requests} requests failed: HTTP statuses ${formatStatusCounts(summary.statusCodes)}` +
    `${answered ? ' (answered, but no branch of any request came back ok)' : ''}${provider}`
  );
}

/** The mock provider's answers by HTTP status over [start, end] (epoch ms; fresh processes: last value = total). */
export async function providerStatusCounts(prometheusUrl: string, start: number, end: number): Promise<Record<string, number>> {
  const seconds = Math.max(1, Math.ceil((end - start) / 1000));
  const samples = await query(prometheusUrl, `sum by (status) (last_over_time(${mock.requests}[${seconds}s]))`, end);
  const counts = samples.filter((s) => s.value > 0).map((s) => [s.metric.status ?? 'unknown', Math.round(s.value)] as const);
  return Object.fromEntries(counts.sort(([a], [b]) => a.localeCompare(b)));
}
