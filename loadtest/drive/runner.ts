// Runs the k6 entry script on one (validated, scaled) scenario against a running agent
// service: writes the scenario next to the report, applies the scenario's mock-provider
// settings through the mock's admin API, writes k6's output to k6.log as it comes (its
// per-second progress lines go there and to onProgress, its other lines to onLine too), and
// reads back the JSON summary k6's handleSummary wrote.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScenarioFile } from '../scenario/types.ts';
import { getMockConfig, putMockConfig } from '../stack/mock-admin.ts';
import { type K6Progress, parseK6Progress } from './progress.ts';
import { K6_ENV, requireTool } from '../stack/tools.ts';
import { condenseSummary, type K6Summary } from '../k6/summary.ts';

export const K6_SCRIPT = k6Script(dirname(fileURLToPath(import.meta.url)));

/** The script in loadtest/k6/ of the repository; in the built package, under dist/k6/ (scripts/build.ts). */
function k6Script(here: string): string {
  const beside = join(here, '..', 'k6', 'run.ts');
  return existsSync(beside) ? beside : join(here, '..', '..', 'k6', 'loadtest', 'k6', 'run.ts');
}
/** Trend stats k6 remote-writes, so Prometheus gets e.g. k6_qs_request_duration_p95. */
export const TREND_STATS = 'p(50),p(95),p(99),avg,max,count';
/** k6's exit code when a threshold failed. */
export const THRESHOLDS_FAILED = 99;
/** After an abort, k6 gets this long to stop on SIGINT before it is killed. */
const ABORT_GRACE_MS = 10_000;

export interface K6RunOptions {
  scenario: ScenarioFile;
  /** Agent service base URL. */
  target: string;
  reportDir: string;
  runId: string;
  /** Prometheus base URL; k6 remote-writes to it when given. */
  prometheusUrl?: string;
  /** Mock provider base URL; needed when the scenario sets mock config or a timeline. */
  mockUrl?: string;
  /** k6's lines other than its banner, run header and progress: the summary, warnings, errors. */
  onLine?: (line: string) => void;
  /** k6's per-second `running (…)` lines, parsed. */
  onProgress?: (progress: K6Progress) => void;
  signal?: AbortSignal;
  /** More k6 outputs (`-o` values), e.g. `json=/abs/points.json` for per-tag samples. */
  outputs?: string[];
  /** More environment for k6 (e.g. K6_SYSTEM_TAGS). */
  env?: Record<string, string>;
}

export interface K6Result {
  exitCode: number;
  summary: K6Summary | undefined;
  /** When the k6 process was spawned / exited, epoch ms. */
  startedAt: number;
  endedAt: number;
  /**
   * When the test itself started (time 0 of the scenario), epoch ms: the exit time minus the
   * test run duration k6 reports, so k6's init (script transpile, ~1 s) is not counted.
   */
  testStartedAt: number;
}


// k6's banner, run header (execution, script, output, scenarios) and per-scenario progress
// bars stay in k6.log; the rest goes to onLine.
function isNoise(line: string): boolean {
  return (
    /^\s*$/.test(line) ||
    /[‾/\\]{2}|Grafana|^\s*\/\s/.test(line) ||
    /^\S+\s+[✓✗•↓]?\s*\[\s*\d+%\s*\]/.test(line) ||
    /^\s*(execution|script|output|scenarios): /.test(line) ||
    /^\s+\* \S+: /.test(line)
  );
}

export async function runK6(opts: K6RunOptions): Promise<K6Result> {
  const k6 = requireTool('k6');
  mkdirSync(opts.reportDir, { recursive: true });
  const scenarioFile = join(opts.reportDir, 'scenario.json');
  writeFileSync(scenarioFile, JSON.stringify(opts.scenario, null, 2));

  // The mock's timeline restarts at the PUT that sets it, i.e. when k6 starts.
  let restore: unknown;
  const mock = opts.scenario.mock;
  if (mock?.config || mock?.timeline) {
    if (!opts.mockUrl) throw new Error(`scenario ${opts.scenario.name} changes the mock provider: pass --mock-url`);
    restore = await getMockConfig(opts.mockUrl);
    await putMockConfig(opts.mockUrl, { ...mock.config, timeline: mock.timeline ?? [] });
  }

  const args = ['run', '--tag', `testid=${opts.runId}`];
  const env: Record<string, string> = { ...(process.env as Record<string, string>), ...K6_ENV, ...opts.env };
  if (opts.prometheusUrl) {
    args.push('-o', 'experimental-prometheus-rw');
    env.K6_PROMETHEUS_RW_SERVER_URL = `${opts.prometheusUrl}/api/v1/write`;
    env.K6_PROMETHEUS_RW_TREND_STATS = TREND_STATS;
    env.K6_PROMETHEUS_RW_PUSH_INTERVAL = '1s';
  }
  for (const output of opts.outputs ?? []) args.push('-o', output);
  args.push('-e', `SCENARIO_FILE=${scenarioFile}`, '-e', `TARGET=${opts.target}`, '-e', `REPORT_DIR=${opts.reportDir}`, K6_SCRIPT);

  const startedAt = Date.now();
  const child = spawn(k6, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let killTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    child.kill('SIGINT'); // k6 stops gracefully and still writes its summary
    killTimer = setTimeout(() => child.kill('SIGKILL'), ABORT_GRACE_MS);
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();
  const log = createWriteStream(join(opts.reportDir, 'k6.log'));
  let partial = '';
  const feed = (chunk: Buffer) => {
    log.write(chunk);
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const progress = parseK6Progress(line);
      if (progress) opts.onProgress?.(progress);
      else if (!isNoise(line)) opts.onLine?.(line);
    }
  };
  child.stdout.on('data', feed);
  child.stderr.on('data', feed);
  const exitCode = await new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, sig) => resolve(code ?? (sig ? 128 : 1)));
  });
  opts.signal?.removeEventListener('abort', onAbort);
  if (killTimer) clearTimeout(killTimer);
  const endedAt = Date.now();
  await new Promise((resolve) => log.end(resolve));
  if (restore && opts.mockUrl) await putMockConfig(opts.mockUrl, { ...(restore as object), timeline: [] }).catch(() => {});

  let summary: K6Summary | undefined;
  try {
    summary = condenseSummary(JSON.parse(readFileSync(join(opts.reportDir, 'k6-summary.json'), 'utf8')));
  } catch {
    summary = undefined; // k6 failed before its summary (e.g. a script error): the log says why
  }
  const testStartedAt = summary?.testRunDurationMs ? Math.max(startedAt, endedAt - summary.testRunDurationMs) : startedAt;
  return { exitCode, summary, startedAt, endedAt, testStartedAt };
}
