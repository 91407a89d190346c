// The run report: totals from Prometheus over the run (the processes are fresh, so a
// counter's last value is the run's total), acquire-time percentiles, alerts that fired,
// and the SVG of acquire-time p95 and calls in flight.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { renderSvg } from './plot.ts';
import { alerts, alertsFiredBetween, queryRange, queryScalar } from './prometheus.ts';

export interface StackTotals {
  requests: number;
  modelCalls: number;
  providerRateLimited: number;
  limiterRateLimited: number;
  timeouts: number;
  acquireSeconds: { p50?: number; p95?: number; p99?: number };
  alertsFired: string[];
  alertsActiveAtEnd: string[];
}

const total = (name: string, seconds: number) => `sum(last_over_time(${name}[${seconds}s]))`;

export async function stackTotals(prometheusUrl: string, start: number, end: number): Promise<StackTotals> {
  const s = Math.max(1, Math.ceil((end - start) / 1000));
  const q = async (expr: string) => (await queryScalar(prometheusUrl, expr, end)) ?? 0;
  const acquire = `sum by (le) (last_over_time(${limiterMetrics.acquireDuration.name}_bucket[${s}s]))`;
  const quantile = (p: number) => queryScalar(prometheusUrl, `histogram_quantile(${p}, ${acquire})`, end);
  return {
    requests: await q(total('agent_requests_total', s)),
    modelCalls: await q(total('mock_provider_requests_total', s)),
    providerRateLimited: await q(total('mock_provider_rate_limited_total', s)),
    limiterRateLimited: await q(total(limiterMetrics.rateLimited.name, s)),
    timeouts: await q(total(limiterMetrics.timeouts.name, s)),
    acquireSeconds: { p50: await quantile(0.5), p95: await quantile(0.95), p99: await quantile(0.99) },
    alertsFired: await alertsFiredBetween(prometheusUrl, start, end),
    alertsActiveAtEnd: (await alerts(prometheusUrl)).map((a) => `${a.name} (${a.state})`),
  };
}

/** Writes run.svg (acquire-time p95 and calls in flight over the run) into reportDir. */
export async function writePlot(prometheusUrl: string, reportDir: string, start: number, end: number, title: string): Promise<string> {
  const step = Math.max(1, Math.round((end - start) / 1000 / 200));
  const p95 = `histogram_quantile(0.95, sum by (le) (rate(${limiterMetrics.acquireDuration.name}_bucket[15s])))`;
  const inFlight = `sum(${limiterMetrics.permitsInUse.name})`;
  const waiting = `sum(${limiterMetrics.waitingCalls.name})`;
  const first = async (expr: string) => (await queryRange(prometheusUrl, expr, start, end, step))[0]?.points ?? [];
  const svg = renderSvg(
    title,
    [
      { title: 'acquire time p95', unit: 's', points: await first(p95) },
      { title: 'model calls in flight', unit: 'calls', points: await first(inFlight) },
      { title: 'calls waiting for a permit or budget', unit: 'calls', points: await first(waiting) },
    ],
    start,
    end,
  );
  const path = join(reportDir, 'run.svg');
  writeFileSync(path, svg);
  return path;
}
