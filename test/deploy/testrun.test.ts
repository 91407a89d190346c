// The k6-operator TestRun rendered from a scenario: its fields against the CRD, the split
// over three runners, and the script ConfigMap run by the real k6 with each runner's
// execution segment (k6 itself must divide the scenario's users across the runners).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { k8sLoadtestCommand } from '../../cli/k8s-loadtest.ts';
import { executionSegments, renderTestRun, SCENARIO_KEY, scriptFiles, TestRunError } from '../../loadtest/k8s/testrun.ts';
import { loadScenario, parseScenario } from '../../loadtest/scenario/schema.ts';
import { K6_ENV, requireTool } from '../../loadtest/stack/tools.ts';

// The fields of k6.io/v1alpha1 TestRun that the renderer sets, as the CRD declares them
// (grafana/k6-operator, config/crd/bases/k6.io_testruns.yaml at v1.6.0: spec requires
// parallelism (int32) and script; script.configMap requires name; runner is the operator's
// Pod type with image, env (core EnvVar, name required), envFrom and securityContext).
// Strict objects: a field the CRD does not have fails here.
const envVar = z.strictObject({ name: z.string().min(1), value: z.string() });
const testRunSchema = z.strictObject({
  apiVersion: z.literal('k6.io/v1alpha1'),
  kind: z.literal('TestRun'),
  metadata: z.strictObject({ name: z.string().min(1), namespace: z.string().optional(), labels: z.record(z.string(), z.string()) }),
  spec: z.strictObject({
    parallelism: z.int().min(1).max(2 ** 31 - 1),
    script: z.strictObject({ configMap: z.strictObject({ name: z.string().min(1), file: z.string().min(1) }) }),
    arguments: z.string(),
    runner: z.strictObject({
      image: z.string().min(1),
      env: z.array(envVar),
      envFrom: z.array(z.strictObject({ secretRef: z.strictObject({ name: z.string().min(1) }) })).optional(),
      securityContext: z.strictObject({ runAsNonRoot: z.boolean() }),
    }),
  }),
});

const OPTIONS = {
  name: 'burst-3',
  namespace: 'loadtest',
  parallelism: 3,
  target: 'http://qs-quotascope-agent.quotascope:8080',
  remoteWriteUrl: 'http://prometheus-operated.monitoring:9090/api/v1/write',
  runId: 'burst-3',
};

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('renderTestRun', () => {
  const rendered = renderTestRun(loadScenario('burst'), OPTIONS);
  const testRun = testRunSchema.parse(rendered.testRun);
  const env = Object.fromEntries(testRun.spec.runner.env.map((e) => [e.name, e.value]));

  it('renders a TestRun with the CRD fields and a valid ConfigMap', () => {
    expect(() => new ConfigMap(rendered.configMap as ConstructorParameters<typeof ConfigMap>[0]).validate()).not.toThrow();
    const docs = parseAllDocuments(rendered.yaml).map((d) => d.toJS());
    expect(docs).toEqual([rendered.configMap, rendered.testRun]);
  });

  it('splits the run over 3 runners: parallelism 3 and the segments 0:1/3, 1/3:2/3, 2/3:1', () => {
    expect(testRun.spec.parallelism).toBe(3);
    expect(rendered.segments).toEqual([
      { segment: '0:1/3', sequence: '0,1/3,2/3,1' },
      { segment: '1/3:2/3', sequence: '0,1/3,2/3,1' },
      { segment: '2/3:1', sequence: '0,1/3,2/3,1' },
    ]);
  });

  it('mounts the entry script, every module it imports and the scenario, flat, with the imports rewritten to the keys', () => {
    const data = (rendered.configMap as { data: Record<string, string> }).data;
    const script = scriptFiles();
    expect(testRun.spec.script.configMap).toEqual({ name: 'burst-3-script', file: 'loadtest.k6.run.ts' });
    expect(Object.keys(data).sort()).toEqual([...Object.keys(script.files), SCENARIO_KEY].sort());
    expect(Object.keys(data)).toEqual(expect.arrayContaining(['loadtest.k6.run.ts', 'loadtest.k6.build-options.ts', 'loadtest.scenario.request.ts', 'instrumentation.errors.ts']));
    for (const [file, text] of Object.entries(data)) {
      for (const [, spec] of text.matchAll(/^\s*(?:import|export)\s[^'"]*['"](\.[^'"]+)['"]/gm)) {
        expect(spec, `${file} imports ${spec}`).toMatch(/^\.\/[-._a-zA-Z0-9]+$/);
        expect(Object.keys(data), `${file} imports ${spec}`).toContain(spec.slice(2));
      }
    }
    expect(parseScenario(JSON.parse(data[SCENARIO_KEY]))).toEqual(loadScenario('burst'));
    expect(env.SCENARIO_FILE).toBe(`/test/${SCENARIO_KEY}`);
  });

  it('makes every runner remote-write with the trend stats the thresholds need and tag its samples with the run id', () => {
    expect(env).toMatchObject({ K6_PROMETHEUS_RW_SERVER_URL: OPTIONS.remoteWriteUrl, TARGET: OPTIONS.target, ...K6_ENV });
    expect(env.K6_PROMETHEUS_RW_TREND_STATS.split(',')).toEqual(expect.arrayContaining(['p(95)', 'count']));
    expect(testRun.spec.arguments.split(' ')).toEqual(['-o', 'experimental-prometheus-rw', '--tag', 'testid=burst-3', '--no-thresholds']);
  });

  it('adds the percentile a k6 threshold names to the trend stats', () => {
    const scenario = { ...loadScenario('burst'), thresholds: { k6: { qs_permit_wait: ['p(90)<5000', 'p(99.9)<9000'] } } };
    const stats = (renderTestRun(scenario, OPTIONS).testRun as { spec: { runner: { env: { name: string; value: string }[] } } }).spec.runner.env.find(
      (e) => e.name === 'K6_PROMETHEUS_RW_TREND_STATS',
    )?.value;
    expect(stats?.split(',')).toEqual(expect.arrayContaining(['p(90)', 'p(99.9)']));
  });

  it('refuses bad options and a scenario too large for a ConfigMap, naming why', () => {
    expect(() => renderTestRun(loadScenario('burst'), { ...OPTIONS, parallelism: 0 })).toThrow('TestRun: parallelism:');
    expect(() => renderTestRun(loadScenario('burst'), { ...OPTIONS, name: 'Burst_3' })).toThrow('TestRun: name:');
    expect(() => renderTestRun(loadScenario('burst'), { ...OPTIONS, target: 'qs-agent:8080' })).toThrow('TestRun: target:');
    const records = Array.from({ length: 15_000 }, (_, i) => ({ at: i / 10, tree: 'review', inputTokensPerCall: 500, trafficClass: 'interactive' as const }));
    const huge = parseScenario({ name: 'huge', arrivals: [{ kind: 'trace', records }] });
    expect(() => renderTestRun(huge, OPTIONS)).toThrow(TestRunError);
    expect(() => renderTestRun(huge, OPTIONS)).toThrow(/more than a ConfigMap's 1048576/);
  });
});

describe('executionSegments', () => {
  it('property: n runners get contiguous equal segments covering 0..1, as k6-operator assigns them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), (n) => {
        const segments = executionSegments(n);
        const value = (s: string) => (s.includes('/') ? Number(s.split('/')[0]) / Number(s.split('/')[1]) : Number(s));
        expect(segments).toHaveLength(n);
        segments.forEach(({ segment, sequence }, i) => {
          const [from, to] = segment.split(':').map(value);
          expect(from).toBeCloseTo(i / n, 12);
          expect(to).toBeCloseTo((i + 1) / n, 12);
          expect(sequence.split(',').map(value)).toHaveLength(n + 1);
        });
      }),
    );
  });
});

describe('the real k6 divides the scenario across the three runners', () => {
  async function maxVus(dir: string, segment?: { segment: string; sequence: string }): Promise<number> {
    const args = ['inspect', '--execution-requirements', '-e', `SCENARIO_FILE=${join(dir, SCENARIO_KEY)}`, join(dir, 'loadtest.k6.run.ts')];
    if (segment) {
      // k6 inspect takes the segment from a config file (its flags have no --execution-segment).
      const config = join(dir, `segment-${segment.segment.replaceAll('/', '_').replace(':', '-')}.json`);
      writeFileSync(config, JSON.stringify({ executionSegment: segment.segment, executionSegmentSequence: segment.sequence }));
      args.splice(1, 0, '-c', config);
    }
    const { stdout } = await run(requireTool('k6'), args, { env: { ...process.env, ...K6_ENV } });
    return (JSON.parse(stdout.slice(stdout.indexOf('{'))) as { maxVUs: number }).maxVUs;
  }

  it.each(['burst', 'steady-40rpm'])('%s: the runners together hold the VUs of one k6, each about a third', async (name) => {
    const rendered = renderTestRun(loadScenario(name), OPTIONS);
    const dir = mkdtempSync(join(tmpdir(), 'qs-testrun-'));
    dirs.push(dir);
    for (const [file, text] of Object.entries((rendered.configMap as { data: Record<string, string> }).data)) writeFileSync(join(dir, file), text);
    const whole = await maxVus(dir);
    const parts = await Promise.all(rendered.segments.map((s) => maxVus(dir, s)));
    expect(parts.reduce((a, b) => a + b, 0)).toBe(whole);
    for (const part of parts) expect(Math.abs(part - whole / 3)).toBeLessThanOrEqual(Math.ceil(whole / 3 / 2) + 1);
  });
});

describe('loadtest --k8s', () => {
  it('prints the TestRun YAML and names the segments on stderr', async () => {
    const lines: string[] = [];
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    const code = await k8sLoadtestCommand(
      ['burst', '--k8s', '--parallelism', '3', '--target', OPTIONS.target, '--remote-write', OPTIONS.remoteWriteUrl, '--run-id', 'r1'],
      (l) => lines.push(l),
    );
    const notes = stderr.mock.calls.map((c) => String(c[0]));
    stderr.mockRestore();
    expect(code).toBe(0);
    const docs = parseAllDocuments(lines.join('\n')).map((d) => d.toJS());
    expect(docs.map((d) => d.kind)).toEqual(['ConfigMap', 'TestRun']);
    expect(docs[1].spec.parallelism).toBe(3);
    expect(notes[0]).toContain('segments 0:1/3 1/3:2/3 2/3:1');
  });

  it.each([
    [['--parallelism', '0'], '--parallelism:'],
    [['--parallelism', '3', '--remote-write', 'not-a-url'], '--remote-write:'],
    [['--bogus', 'x'], "Unknown option '--bogus'"],
  ])('refuses %j with one line and exit code 2', async (extra, message) => {
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    const code = await k8sLoadtestCommand(['burst', '--k8s', '--target', OPTIONS.target, '--remote-write', OPTIONS.remoteWriteUrl, ...extra], () => {});
    const printed = stderr.mock.calls.map((c) => String(c[0]));
    stderr.mockRestore();
    expect(code).toBe(2);
    expect(printed).toHaveLength(1);
    expect(printed[0]).toContain(message);
    expect(printed[0]).not.toContain('\n');
  });
});
