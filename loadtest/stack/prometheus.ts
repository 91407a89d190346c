// A local Prometheus for a run: scrapes the agent service and the mock provider under the
// job names the dashboards rely on, receives k6's remote write, and loads the generated
// alert rules when they exist.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { jobs } from '../../dashboards/config.ts';
import { queryScalar } from '../measure/prometheus-client.ts';
import { freePort, type ProcessGroup, waitForHealthy } from './processes.ts';
import { requireTool } from './tools.ts';

export const AGENT_JOB = jobs.agent;
export const MOCK_JOB = jobs.mockProvider;
export const RULES_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dashboards', 'generated', 'prometheus', 'rules.yml');

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
  return stringify({
    global: { scrape_interval: interval, evaluation_interval: interval },
    ...(rulesFile ? { rule_files: [rulesFile] } : {}),
    scrape_configs: Object.entries(setup.jobs).map(([job, targets]) => ({ job_name: job, static_configs: [{ targets }] })),
  });
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


/**
 * Resolves once Prometheus has scraped `targets` targets successfully. It starts scraping
 * a few seconds after it is ready (service discovery settles first): a run that started
 * before then would miss its first seconds (the burst) in every chart.
 */
export async function waitForFirstScrape(prometheusUrl: string, targets: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let up = 0;
  while (Date.now() < deadline) {
    up = (await queryScalar(prometheusUrl, 'count(up == 1)').catch(() => undefined)) ?? 0;
    if (up >= targets) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`prometheus at ${prometheusUrl} scraped ${up} of ${targets} targets within ${timeoutMs} ms`);
}
