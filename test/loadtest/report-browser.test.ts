// The run report in a real browser: a short overloaded run (real k6 through `loadtest`, the
// agent service with 2 permits and a 300 ms maxWait, the mock provider, a real Prometheus
// with the generated rules, their `for` shortened to 2 s so LimiterTimeouts fires in
// seconds), then reports/<run-id>/index.html opened in headless Debian chromium. Also: the
// page when Prometheus is down and when the range has no data, and the acquire quantiles
// of that overloaded run staying within maxWait plus one bucket step.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startAgentService } from '../../agent/index.ts';
import { dashboards, panelsOf } from '../../dashboards/index.ts';
import { acquireSecondsBuckets } from '../../instrumentation/metrics/definitions.ts';
import { launchChromium } from '../../loadtest/report/browser.ts';
import type { ReportData } from '../../loadtest/report/page.ts';
import { readRunRecord } from '../../loadtest/report/run-record.ts';
import { stackTotals } from '../../loadtest/report/summary.ts';
import { freePort, ProcessGroup } from '../../loadtest/stack/processes.ts';
import { AGENT_JOB, MOCK_JOB, RULES_FILE, startPrometheus, waitForFirstScrape } from '../../loadtest/stack/prometheus.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { startMockProvider } from '../../mock-provider/index.ts';

const MAX_WAIT_MS = 300;
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'qs-report-'));
const group = new ProcessGroup(dir);
let mock: Awaited<ReturnType<typeof startMockProvider>>;
let agent: Awaited<ReturnType<typeof startAgentService>>;
let prometheusUrl: string;
/** The folder `loadtest` wrote, and what it printed. */
let runDir: string;
let loadtestOut: string;

/** The generated rules with every alert's `for` cut to 2 s, so an alert fires within a short run. */
function fastRules(): string {
  const rules = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: { alert?: string; for?: string }[] }[] };
  for (const g of rules.groups) for (const r of g.rules) if (r.alert) r.for = '2s';
  const file = join(dir, 'rules-fast.yml');
  writeFileSync(file, stringify(rules));
  return file;
}

interface PageVisit {
  requests: string[];
  errors: string[];
  charts: { id: string; points: number }[];
  alertsText: string;
  bannerText: string;
  data: ReportData;
}

/** Opens a report in headless chromium and reads what it shows. */
async function visit(htmlPath: string): Promise<PageVisit> {
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    const requests: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(pathToFileURL(htmlPath).href);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    const charts = await page.$$eval('section.chart', (els) => els.map((e) => ({ id: e.getAttribute('data-chart-id') ?? '', points: Number(e.getAttribute('data-points') ?? -1) })));
    const alertsText = (await page.textContent('#alerts')) ?? '';
    const bannerText = (await page.locator('.banner').allTextContents()).join(' ');
    const data = JSON.parse((await page.textContent('#report-data')) ?? '{}') as ReportData;
    return { requests, errors, charts, alertsText, bannerText, data };
  } finally {
    await browser.close();
  }
}

function reportCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, ['cli/quotascope.ts', 'report', ...args]).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

beforeAll(async () => {
  requireTool('k6');
  requireTool('chromium');
  mock = await startMockProvider(
    { timeToFirstTokenMs: { kind: 'fixed', value: 100 }, perOutputTokenMs: { kind: 'fixed', value: 3 }, outputTokens: { kind: 'fixed', value: 100 } },
    { port: 0, host: '127.0.0.1' },
  );
  // 2 permits for 4 parallel reviewers of ~0.4 s each: half of them wait longer than maxWait.
  // An admitted request's calls wait until its deadline: 4 s (the calls' time stated), which the queue outgrows within the run.
  agent = await startAgentService({
    providerUrl: mock.url,
    port: 0,
    host: '127.0.0.1',
    permits: 2,
    tokensPerMinute: 900_000,
    maxWaitMs: MAX_WAIT_MS,
    estimatedTokensPerCall: 1100,
    requestDeadlineMs: 4_000,
    expectedCallMs: 400,
  });
  prometheusUrl = await startPrometheus(group, {
    jobs: { [AGENT_JOB]: [agent.url.replace('http://', '')], [MOCK_JOB]: [mock.url.replace('http://', '')] },
    dataDir: join(dir, 'prometheus'),
    scrapeIntervalSeconds: 1,
    rulesFile: fastRules(),
  });
  await waitForFirstScrape(prometheusUrl, 2);
  const scenario = join(dir, 'overload.json');
  writeFileSync(scenario, JSON.stringify({ name: 'overload', description: 'review requests at 90/min against 2 permits', defaults: { inputTokensPerCall: 1000 }, arrivals: [{ kind: 'constant', start: 0, perMinute: 90, duration: 16 }] }));
  const reports = join(dir, 'reports');
  const { stdout } = await run(process.execPath, ['cli/quotascope.ts', 'loadtest', scenario, '--target', agent.url, '--prometheus', prometheusUrl, '--mock-url', mock.url, '--plan', '--report-dir', reports]);
  loadtestOut = stdout;
  runDir = join(reports, readdirSync(reports)[0]);
}, 120_000);

afterAll(async () => {
  await group.stopAll();
  await agent?.close();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the run report in headless chromium', () => {
  it('loadtest prints progress lines and the report path; k6 per-second lines go to k6.log only', () => {
    expect(loadtestOut).toMatch(/^\[run\] .* · \d+ requests · acquire p95 .* · 429s \d+ · timeouts \d+$/m);
    expect(loadtestOut).not.toMatch(/running \([\dm.]+s\)/);
    expect(readFileSync(join(runDir, 'k6.log'), 'utf8')).toMatch(/running \([\dm.]+s\), \d+\/\d+ VUs/);
    expect(loadtestOut).toContain(`report: ${join(runDir, 'index.html')}`);
  });

  it('loads with no console error and no network request, one chart per panel with data, and the alert the run fired', async () => {
    const page = await visit(join(runDir, 'index.html'));
    expect(page.errors).toEqual([]);
    expect(page.requests.filter((u) => !/^(file|data):/.test(u))).toEqual([]);
    const panels = dashboards.flatMap((d) => panelsOf(d).map((p) => ({ id: `${d.uid}/${p.key}`, quiet: p.quietRunEmpty !== undefined })));
    expect(page.charts.map((c) => c.id)).toEqual(panels.map((p) => p.id));
    for (const c of page.charts) {
      if (!panels.find((p) => p.id === c.id)?.quiet || c.id.endsWith('/timeouts')) expect(c.points, `${c.id} has data points`).toBeGreaterThan(0);
    }
    expect(page.bannerText).toBe('');
    expect(page.data.alerts.some((a) => a.name === 'LimiterTimeouts' && a.state === 'firing')).toBe(true);
    expect(page.alertsText).toContain('LimiterTimeouts');
    expect(page.alertsText).toContain('firing');
    // The run's own tables: parameters, the k6 summary, plan vs measured.
    expect(page.data.parameters.scenario).toBeTruthy();
    expect(page.data.k6?.requests).toBeGreaterThan(0);
    expect(page.data.planVsMeasured).toBeDefined();
  }, 60_000);

  it('no acquire quantile of the overloaded run exceeds maxWait plus one bucket step', async () => {
    const record = readRunRecord(runDir);
    const limit = acquireSecondsBuckets(MAX_WAIT_MS / 1000).at(-1) as number;
    const totals = await stackTotals(prometheusUrl, record.range.from, record.range.to);
    expect(totals.timeouts).toBeGreaterThan(0); // the run did wait up to maxWait
    expect(totals.maxWaitSeconds).toBe(MAX_WAIT_MS / 1000);
    for (const q of [totals.acquireSeconds.p50, totals.acquireSeconds.p95, totals.acquireSeconds.p99]) {
      expect(q).toBeDefined();
      expect(q as number).toBeLessThanOrEqual(limit);
    }
    const { data } = await visit(join(runDir, 'index.html'));
    const acquirePanels = data.charts.filter((c) => /acquire/i.test(c.title) && c.unit === 's' && c.kind === 'timeseries');
    expect(acquirePanels.length).toBeGreaterThan(0);
    for (const chart of acquirePanels) {
      // The limiter's quantiles: not k6's request times, not the maxWait lines, not timeouts per second.
      for (const s of chart.series.filter((x) => !/k6/.test(x.label) && !x.reference && (x.unit ?? 's') === 's')) {
        for (const [, v] of s.points) if (Number.isFinite(v)) expect(v, `${chart.title} ${s.label}`).toBeLessThanOrEqual(limit);
      }
    }
  }, 60_000);

  it('quotascope report --run-dir remakes the page and takes screenshots', async () => {
    const r = await reportCli(['--run-dir', runDir, '--prometheus', prometheusUrl, '--screenshots']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`report: ${join(runDir, 'index.html')}`);
    for (const f of ['report.png', 'overview.png', 'quotascope-limiter--acquire-quantiles.png']) {
      const path = join(runDir, 'screenshots', f);
      expect(existsSync(path), f).toBe(true);
      expect(readFileSync(path).subarray(1, 4).toString()).toBe('PNG');
    }
  }, 90_000);

  it('a Prometheus that is down gives a page that says so, and exit 1 with one line', async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    const r = await reportCli(['--prometheus', down, '--from', 'now-5m', '--to', 'now', '--report-dir', join(dir, 'down'), '--run-id', 'down']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^report: http:\/\/127\.0\.0\.1:\d+ did not answer/)]);
    const page = await visit(join(dir, 'down', 'down', 'index.html'));
    expect(page.errors).toEqual([]);
    expect(page.bannerText).toContain('Prometheus is not reachable.');
    expect(page.bannerText).toContain(down);
  }, 60_000);

  it('a range with no data gives a page that says so', async () => {
    const r = await reportCli(['--prometheus', prometheusUrl, '--from', '2020-01-01T00:00:00Z', '--to', '2020-01-01T00:10:00Z', '--report-dir', join(dir, 'empty'), '--run-id', 'empty']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/none of the \d+ panels has a sample between 2020-01-01T00:00:00\.000Z and 2020-01-01T00:10:00\.000Z/);
    const page = await visit(join(dir, 'empty', 'empty', 'index.html'));
    expect(page.errors).toEqual([]);
    expect(page.bannerText).toContain('No data in this range.');
  }, 60_000);

  it('bad flags are refused with one line naming the flag (exit 2)', async () => {
    for (const [args, flag] of [
      [['--from', 'yesterday'], '--from'],
      [['--prometheus', 'ftp://x'], '--prometheus'],
      [['--rate-interval', 'fast'], '--rate-interval'],
    ] as const) {
      const r = await reportCli([...args]);
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toMatch(new RegExp(`^report: ${flag}: `));
    }
    const r = await reportCli(['--from', 'now', '--to', 'now-1h', '--prometheus', prometheusUrl]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(/^report: --to: must be after --from/);
  }, 30_000);
});
