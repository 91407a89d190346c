// The verdict on a finished run beyond k6's thresholds: a run whose user requests ALL failed
// measured nothing about the limiter, so it fails (exit 1) and says what it saw: the HTTP
// statuses the requests ended with and, where the stack has a mock provider, what the
// provider answered the model calls. So does a run that measured nothing the verdict needs:
// no limiter metrics, or no request completed in its steady window.
import type { K6Summary } from '../k6/summary.ts';
import { formatStatusCounts } from '../k6/summary-text.ts';
import type { QueryError, Sample } from './prometheus-client.ts';

/** Exit code of a run whose every request failed. */
export const ALL_FAILED_EXIT_CODE = 1;
/** Exit code of a run that measured nothing the verdict needs. */
export const UNMEASURED_EXIT_CODE = 1;

/** What a run measured that its verdict rests on. */
export interface RunEvidence {
  /** Limiter series Prometheus scraped from the agent side during the run. */
  limiterSeries: number;
  /** Requests answered 2xx inside the steady window, and the window's length; absent without a steady phase. */
  steady?: { completions: number; seconds: number };
}

/** Why the run cannot give a verdict (one line), or undefined when it measured what it needs. */
export function unmeasuredMessage(e: RunEvidence): string | undefined {
  if (e.limiterSeries === 0) {
    return 'measured nothing the verdict needs: Prometheus scraped no limiter metrics (llm_limiter_*) from the agent, so acquire time, budget and plan vs measured are blind (are the models wrapped with a copy of quotascope the served /metrics does not expose?)';
  }
  if (e.steady && e.steady.completions === 0) {
    return `measured nothing the verdict needs: no request completed inside the ${Math.round(e.steady.seconds)} s steady window, so what the quota serves is unknown: lengthen the run (--duration) or lower the load`;
  }
  return undefined;
}

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

/** The mock provider's answers by HTTP status, from the answer to providerStatusQuery (run-queries.ts); undefined when it could not be read. */
export function providerStatusCountsOf(samples: readonly Sample[] | QueryError): Record<string, number> | undefined {
  if ('error' in samples) return undefined;
  const counts = samples.filter((s) => s.value > 0).map((s) => [s.metric.status ?? 'unknown', Math.round(s.value)] as const);
  return Object.fromEntries(counts.sort(([a], [b]) => a.localeCompare(b)));
}

/** Why every request failed, and why the run fails as a whole (one line, its exit code); `evidence` where the run's own stack was measured. */
export function runProblem(
  summary: K6Summary | undefined,
  providerStatuses: Record<string, number> | undefined,
  evidence: RunEvidence | undefined,
): { failure?: string; problem?: { message: string; exitCode: number } } {
  const failure = allFailedMessage(summary, providerStatuses);
  const why = evidence && !failure ? unmeasuredMessage(evidence) : undefined;
  const problem = failure ? { message: failure, exitCode: ALL_FAILED_EXIT_CODE } : why ? { message: why, exitCode: UNMEASURED_EXIT_CODE } : undefined;
  return { failure, problem };
}
