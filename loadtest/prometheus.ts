// A local Prometheus for a run: scrapes the agent service and the mock provider under the
// job names the dashboards rely on, receives k6's remote write, loads the generated alert
// rules when they exist; plus the few HTTP API queries the report needs.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProcessGroup } from './processes.ts';
import { freePort, waitForHealthy } from './processes.ts';
import { requireTool } from './tools.ts';

export const AGENT_JOB = 'quotascope-agent';
export const MOCK_JOB = 'quotascope-mock-provider';
export const RULES_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'dashboards', 'generated', 'prometheus', 'rules.yml');

export interface PrometheusSetup {
  /** host:port targets per job name. */
  jobs: Record<string, string[]>;
  dataDir: string;
  scrapeIntervalSeconds?: number;
  rulesFile?: string;
  port?: number;
}

export function prometheusConfig(setup: PrometheusSetup, rulesFile: string | undefined): string {
  const interval = `${setup.scrapeIntervalSeconds ?? 5}s`;
  const lines = ['global:', `  scrape_interval: ${interval}`, `  evaluation_interval: ${interval}`];
  if (rulesFile) lines.push('rule_files:', `  - ${JSON.stringify(rulesFile)}`);
  lines.push('scrape_configs:');
  for (const [job, targets] of Object.entries(setup.jobs)) {
    lines.push(`  - job_name: ${JSON.stringify(job)}`, '    static_configs:', `      - targets: ${JSON.stringify(targets)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Starts Prometheus in `group` and waits until it is ready; returns its base URL. */
export async function startPrometheus(group: ProcessGroup, setup: PrometheusSetup): Promise<string> {
  const bin = requireTool('prometheus');
  mkdirSync(setup.dataDir, { recursive: true });
  const rulesFile = setup.rulesFile ?? (existsSync(RULES_FILE) ? RULES_FILE : undefined);
  const configFile = join(setup.dataDir, 'prometheus.yml');
  writeFileSync(configFile, prometheusConfig(setup, rulesFile));
  const port = setup.port ?? (await freePort());
  group.start('prometheus', bin, [
    `--config.file=${configFile}`,
    `--storage.tsdb.path=${join(setup.dataDir, 'tsdb')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--web.enable-remote-write-receiver',
    '--storage.tsdb.retention.time=1d',
  ]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHealthy('prometheus', `${url}/-/ready`, 30_000, () => group.assertRunning());
  return url;
}

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

async function api(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { status: string; data: unknown; error?: string };
  if (body.status !== 'success') throw new Error(`prometheus: ${body.error ?? res.status}`);
  return body.data;
}

/** An instant query; `time` in epoch ms (now when absent). */
export async function query(prometheusUrl: string, expr: string, time?: number): Promise<Sample[]> {
  const params = new URLSearchParams({ query: expr });
  if (time !== undefined) params.set('time', String(time / 1000));
  const data = (await api(`${prometheusUrl}/api/v1/query?${params}`)) as { result: { metric: Record<string, string>; value: [number, string] }[] };
  return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

/** The first sample's value, or undefined when the query returned nothing or NaN. */
export async function queryScalar(prometheusUrl: string, expr: string, time?: number): Promise<number | undefined> {
  const [first] = await query(prometheusUrl, expr, time);
  return first && Number.isFinite(first.value) ? first.value : undefined;
}

export interface Series {
  metric: Record<string, string>;
  points: [number, number][];
}

/** A range query; start and end in epoch ms; points are [epoch ms, value]. */
export async function queryRange(prometheusUrl: string, expr: string, start: number, end: number, stepSeconds: number): Promise<Series[]> {
  const params = new URLSearchParams({ query: expr, start: String(start / 1000), end: String(end / 1000), step: String(stepSeconds) });
  const data = (await api(`${prometheusUrl}/api/v1/query_range?${params}`)) as { result: { metric: Record<string, string>; values: [number, string][] }[] };
  return data.result.map((r) => ({ metric: r.metric, points: r.values.map(([t, v]) => [t * 1000, Number(v)] as [number, number]) }));
}

export interface Alert {
  name: string;
  state: string;
  activeAt?: string;
}

/** Alerts pending or firing right now. */
export async function alerts(prometheusUrl: string): Promise<Alert[]> {
  const data = (await api(`${prometheusUrl}/api/v1/alerts`)) as { alerts: { labels: Record<string, string>; state: string; activeAt?: string }[] };
  return data.alerts.map((a) => ({ name: a.labels.alertname ?? '?', state: a.state, activeAt: a.activeAt }));
}

/** Alerts that fired at any time in [start, end] (from the ALERTS series), by name. */
export async function alertsFiredBetween(prometheusUrl: string, start: number, end: number): Promise<string[]> {
  const seconds = Math.max(1, Math.ceil((end - start) / 1000));
  const samples = await query(prometheusUrl, `max by (alertname) (max_over_time(ALERTS{alertstate="firing"}[${seconds}s]))`, end);
  return samples.map((s) => s.metric.alertname).sort();
}
