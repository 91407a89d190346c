// The summary `start` prints at the end of a finished run: the verdict first, then the
// figures behind it (client, agent service, provider, limiter, alerts), plan vs measured, and
// where the run record and the report are.
import type { K6Summary } from './k6/summary.ts';
import { formatHttpFailed, formatStatusCounts } from './k6/summary-text.ts';
import { formatComparison } from './measure/comparison-text.ts';
import { formatTimeouts, type StackTotals } from './report/summary.ts';
import type { RunResult } from './run-pipeline.ts';
import type { ScenarioFile } from './scenario/types.ts';
import type { StartOptions } from './start-options.ts';

const fmt = (v: number | undefined, unit = ''): string => (v === undefined ? '-' : `${Number.isInteger(v) ? v : v.toFixed(2)}${unit}`);

/** Served requests' durations, apart from every answer's (shed requests answer 429 at once and pull the percentiles down). */
function requestDurationLines(summary: K6Summary | undefined): string[] {
  const s = (ms: number | undefined) => fmt(ms === undefined ? undefined : ms / 1000, ' s');
  const served = summary?.servedDurationMs;
  const all = summary?.durationMs;
  return [
    ...(served ? [`  served duration:   p50 ${s(served.p50)}  p95 ${s(served.p95)}  p99 ${s(served.p99)} (served requests)`] : []),
    `  request duration:  p50 ${s(all?.p50)}  p95 ${s(all?.p95)} (every answer, the instant 429s of shed requests included)`,
  ];
}

/** The summary `start` prints at the end of a finished run: the verdict first, then the figures behind it. */
export function startSummary(r: RunResult, scenario: ScenarioFile, quotaSharing: StartOptions['quotaSharing']): string {
  const durations = requestDurationLines(r.summary);
  const totals = r.totals as StackTotals;
  const summary = r.summary;
  const comparison = r.comparison ?? { skipped: 'no plan' };
  const { agent } = r;
  const a = totals.acquireSeconds;
  const o = summary?.outcomes;
  const started = o ? o.served + o.partial + o.shed + o.failed + o.unfinished : 0;
  const share = (n: number) => fmt((n / Math.max(1, started)) * 100, '%');
  const wasted = totals.actualTokens > 0 ? ` (${fmt((totals.wastedTokens / totals.actualTokens) * 100, '%')} of the counted tokens)` : '';
  return [
    '',
    r.verdict?.line,
    `quotascope run ${r.runId} (${scenario.name})`,
    `  quota sharing:     ${quotaSharing}${quotaSharing === 'central' ? ' (one window in Redis for every replica)' : quotaSharing === 'adaptive' ? ' (each replica learns its share from 429s)' : ' (each replica its share)'}`,
    o
      ? `  user requests:     ${started} started: served ${o.served} (${share(o.served)}), partial ${o.partial} (${share(o.partial)}), shed ${o.shed} (${share(o.shed)}), failed ${o.failed}, unfinished ${o.unfinished}`
      : '  user requests:     no client summary',
    `  agent service:     ${totals.requests} answered; missing branches in ${fmt((summary?.missingBranchesRate ?? 0) * 100, '%')} of the admitted requests`,
    `  HTTP statuses:     ${formatStatusCounts(summary?.statusCodes ?? {})}${summary ? `; ${formatHttpFailed(summary.failedRate, summary.outcomes)}` : ''}`,
    `  model calls:       ${totals.modelCalls} at the provider${agent?.modelCallsPerRequest ? ` (${agent.modelCallsPerRequest} per request counted in ${agent.app})` : agent ? ` (${agent.app}: ${agent.countNote})` : ''}`,
    `  wasted tokens:     ${Math.round(totals.wastedTokens)}${wasted} spent by requests that did not end wholly ok`,
    `  429s:              ${totals.providerRateLimited} answered by the provider, ${totals.limiterRateLimited} seen by the limiter`,
    `  acquire time:      p50 ${fmt(a.p50, ' s')}  p95 ${fmt(a.p95, ' s')}  p99 ${fmt(a.p99, ' s')} (admitted calls; maxWait ${fmt(totals.maxWaitSeconds, ' s')})`,
    `  limiter timeouts:  ${formatTimeouts(totals.timeouts, totals.timeoutsByReason)}`,
    ...durations,
    `  alerts fired:      ${totals.alertsFired.length ? totals.alertsFired.join(', ') : 'none'}`,
    `  alerts at the end: ${totals.alertsActiveAtEnd.length ? totals.alertsActiveAtEnd.join(', ') : 'none pending or firing'}`,
    'skipped' in comparison ? `plan vs measured: skipped (${comparison.skipped})` : formatComparison(comparison),
    `  run record:        ${r.recordPath}`,
    `report: ${r.reportPath}`,
  ].join('\n');
}
