// The threshold evaluator of distributed runs: parsing and judging, the mixture bound it
// rests on (a fast-check property), and the verdicts on recorded data: a real Prometheus
// serves a TSDB that promtool builds from fixtures/three-runners.om, the metrics three real
// k6 runners remote-wrote during a split run, and the runners' own summaries beside it
// (test/deploy/record-k6-run.ts recorded both).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildThresholds } from '../../loadtest/k6/build-options.ts';
import { k8sLoadtestCommand } from '../../cli/k8s-loadtest.ts';
import { evaluateThresholds, findRunWindow, formatVerdicts, judge, mixtureBounds, parseThreshold, parseThresholds, ThresholdError } from '../../loadtest/k8s/thresholds.ts';
import { freePort, ProcessGroup, waitForHealthy } from '../../loadtest/stack/processes.ts';
import { loadScenario, SCENARIOS_DIR } from '../../loadtest/scenario/schema.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));
const SCENARIO = join(fixtures, 'three-runners.json');
const RECORDING = join(fixtures, 'three-runners.om');
/** Each runner's end-of-test summary, as k6 computed it over its own segment. */
const runners = JSON.parse(readFileSync(join(fixtures, 'three-runners.summaries.json'), 'utf8')) as {
  http_reqs: { count: number };
  qs_request_duration: { avg: number; max: number; count: number; 'p(95)': number };
  qs_missing_branches: { rate: number };
}[];
const RUN_ID = 'three-runners-rec';

describe('parsing k6 thresholds', () => {
  it('parses every threshold of the shipped scenarios', () => {
    for (const name of ['burst', 'steady-40rpm', 'ramp', 'quota-incident', 'lanes', 'trace']) {
      expect(() => parseThresholds(buildThresholds(loadScenario(join(SCENARIOS_DIR, `${name}.json`))))).not.toThrow();
    }
  });

  it('reads sub-metric tags, the aggregation, the operator and the limit', () => {
    expect(parseThreshold('qs_request_duration{traffic_class:interactive,tree:review}', 'p(99.9) <= 1500')).toMatchObject({
      name: 'qs_request_duration',
      tags: { traffic_class: 'interactive', tree: 'review' },
      aggregation: 'p(99.9)',
      op: '<=',
      limit: 1500,
    });
    expect(() => parseThreshold('http_req_duration', 'p95<800')).toThrow(ThresholdError);
    expect(() => parseThreshold('http-req', 'avg<1')).toThrow('threshold http-req: not a k6 metric name');
  });
});

describe('judging an interval', () => {
  it.each([
    [{ low: 1, high: 2 }, '<', 3, 'pass'],
    [{ low: 1, high: 3 }, '<', 3, 'unproven'],
    [{ low: 3, high: 4 }, '<', 3, 'fail'],
    [{ low: 3, high: 4 }, '>=', 3, 'pass'],
    [{ low: 2, high: 4 }, '>=', 3, 'unproven'],
    [{ low: 5, high: 5 }, '==', 5, 'pass'],
    [{ low: 4, high: 6 }, '==', 5, 'unproven'],
    [{ low: 4, high: 6 }, '!=', 7, 'pass'],
  ] as const)('%j %s %d is %s', (interval, op, limit, expected) => {
    expect(judge(interval, op, limit)).toBe(expected);
  });
});

describe('the mixture bound', () => {
  /** The inverse of the empirical CDF: the smallest sample x with F(x) >= q. */
  const quantile = (values: readonly number[], q: number): number => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
  };

  it('property: the quantile of pooled runners lies between the smallest and largest runner quantile', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 6 }),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        (runners, q) => {
          const bounds = mixtureBounds(runners.map((r) => quantile(r, q)));
          const pooled = quantile(runners.flat(), q);
          expect(pooled).toBeGreaterThanOrEqual(bounds.low);
          expect(pooled).toBeLessThanOrEqual(bounds.high);
        },
      ),
    );
  });
});

describe('verdicts on a recorded three-runner run', () => {
  const group = new ProcessGroup(mkdtempSync(join(tmpdir(), 'qs-thresholds-log-')));
  const work = mkdtempSync(join(tmpdir(), 'qs-thresholds-'));
  let prometheus: string;
  let window: { start: number; end: number };
  const thresholds = buildThresholds(loadScenario(SCENARIO));

  beforeAll(async () => {
    const tsdb = join(work, 'tsdb');
    await promisify(execFile)(requireTool('promtool'), ['tsdb', 'create-blocks-from', 'openmetrics', RECORDING, tsdb]);
    writeFileSync(join(work, 'prometheus.yml'), 'global:\n  scrape_interval: 1m\n');
    const port = await freePort();
    // The recording is in the past: a retention long enough that Prometheus keeps its block.
    group.start('prometheus', requireTool('prometheus'), [
      `--config.file=${join(work, 'prometheus.yml')}`,
      `--storage.tsdb.path=${tsdb}`,
      '--storage.tsdb.retention.time=36500d',
      `--web.listen-address=127.0.0.1:${port}`,
    ]);
    prometheus = `http://127.0.0.1:${port}`;
    await waitForHealthy('prometheus', `${prometheus}/-/ready`, 30_000, () => group.assertRunning());
    const lastSample = Math.max(...[...readFileSync(RECORDING, 'utf8').matchAll(/ (\d+\.\d+)$/gm)].map((m) => Number(m[1]) * 1000));
    const found = await findRunWindow(prometheus, { testid: RUN_ID }, 3_600_000, lastSample + 60_000);
    if (!found) throw new Error('the recorded run was not found in Prometheus');
    window = found;
  });

  afterAll(async () => {
    await group.stopAll();
    rmSync(work, { recursive: true, force: true });
  });

  const evaluate = (t: Record<string, string[]>, testid = RUN_ID) => evaluateThresholds(t, { prometheusUrl: prometheus, selector: { testid }, ...window });

  it('finds the run window from the runners own series', () => {
    expect(window.end - window.start).toBeGreaterThan(10_000);
    expect(window.end - window.start).toBeLessThan(120_000);
  });

  it("passes the scenario's thresholds, pooling the three runners as their own k6 summaries add up", async () => {
    const verdict = await evaluate(thresholds);
    expect(formatVerdicts(verdict)).toContain('thresholds: all passed');
    expect(verdict.ok).toBe(true);
    const observed = (key: string) => {
      const v = verdict.verdicts.find((x) => `${x.metric} ${x.expression}` === key);
      if (!v?.observed) throw new Error(`no verdict for ${key}`);
      return v.observed;
    };
    const requests = runners.reduce((n, r) => n + r.http_reqs.count, 0);
    expect(observed('http_reqs count>=10')).toEqual({ low: requests, high: requests });
    expect(observed('http_req_failed rate<=0.05')).toEqual({ low: 0, high: 0 });
    // Exact: each runner's missing-branch rate weighted by its requests (the runners differ).
    const missing = observed('qs_missing_branches rate<=0.9');
    const missingWeighted = runners.reduce((s, r) => s + r.qs_missing_branches.rate * r.http_reqs.count, 0) / requests;
    expect(new Set(runners.map((r) => r.qs_missing_branches.rate)).size).toBeGreaterThan(1);
    expect(missing.low).toBe(missing.high);
    expect(missing.low).toBeCloseTo(missingWeighted, 9);
    expect(missing.low).toBeGreaterThan(0);
    // Exact: the max of the runners' max, the count-weighted mean of their means.
    const max = observed('qs_request_duration max<60000');
    expect(max.low).toBeCloseTo(Math.max(...runners.map((r) => r.qs_request_duration.max)), 6);
    const avg = observed('qs_request_duration avg<30000');
    const weighted = runners.reduce((s, r) => s + r.qs_request_duration.avg * r.qs_request_duration.count, 0) / requests;
    expect(avg.low).toBe(avg.high);
    expect(avg.low).toBeCloseTo(weighted, 6);
    // Bounded: each runner's own p95 (a mixture of its series) lies inside the pooled interval.
    const p95 = observed('qs_request_duration{traffic_class:interactive} p(95)<30000');
    expect(p95.low).toBeLessThan(p95.high);
    for (const r of runners) {
      expect(r.qs_request_duration['p(95)']).toBeGreaterThanOrEqual(p95.low - 1e-6);
      expect(r.qs_request_duration['p(95)']).toBeLessThanOrEqual(p95.high + 1e-6);
    }
  });

  it('fails thresholds the run did not meet, and one the runners straddle as unproven', async () => {
    const pass = await evaluate({ 'qs_request_duration{traffic_class:interactive}': ['p(95)<30000'] });
    const { low, high } = pass.verdicts[0].observed ?? { low: 0, high: 0 };
    const verdict = await evaluate({
      'qs_request_duration{traffic_class:interactive}': [`p(95)<${Math.round(low / 2)}`, `p(95)<${(low + high) / 2}`],
      qs_request_duration: ['max<100'],
      http_reqs: ['count>=1000'],
      qs_missing_branches: ['rate<=0.01'],
    });
    expect(verdict.ok).toBe(false);
    expect(verdict.verdicts.map((v) => v.judgement)).toEqual(['fail', 'unproven', 'fail', 'fail', 'fail']);
    expect(formatVerdicts(verdict)).toContain('thresholds: FAILED');
  });

  it('fails a threshold without samples instead of passing it', async () => {
    const verdict = await evaluate(thresholds, 'another-run');
    expect(verdict.ok).toBe(false);
    expect(new Set(verdict.verdicts.map((v) => v.judgement))).toEqual(new Set(['no data']));
  });

  it('loadtest --k8s --evaluate exits 0 on a pass and 99 (k6 thresholds failed) on a failure', async () => {
    const strict = join(work, 'strict.json');
    const scenario = JSON.parse(readFileSync(SCENARIO, 'utf8'));
    writeFileSync(strict, JSON.stringify({ ...scenario, thresholds: { p95Ms: { interactive: 10 } } }));
    const lines: string[] = [];
    const args = (file: string) => [file, '--k8s', '--evaluate', '--prometheus', prometheus, '--run-id', RUN_ID, '--start', String(window.start), '--end', String(window.end)];
    expect(await k8sLoadtestCommand(args(SCENARIO), (l) => lines.push(l))).toBe(0);
    expect(lines.join('\n')).toContain('thresholds: all passed');
    expect(await k8sLoadtestCommand(args(strict), (l) => lines.push(l))).toBe(99);
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    const code = await k8sLoadtestCommand([SCENARIO, '--k8s', '--evaluate', '--prometheus', 'http://127.0.0.1:1', '--run-id', RUN_ID, '--start', '0', '--end', '1000'], () => {});
    const printed = stderr.mock.calls.map((c) => String(c[0]));
    stderr.mockRestore();
    expect(code).toBe(1);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^loadtest --k8s: cannot query Prometheus: /);
  });
});
