// Records the Prometheus data the threshold evaluator's test replays: a distributed k6 run
// as k6-operator would start it, on this machine. The mock provider and the agent service
// run as real processes (the agent with 3 permits and a 600 ms wait, so the burst loses
// branches and runners see different missing-branch rates); the TestRun for fixtures/three-runners.json is rendered with
// parallelism 3; its ConfigMap's files are written to a folder (the runners' /test); three
// real k6 processes run with the operator's argv (segment, sequence, the TestRun's
// arguments, instance_id and testrun_name tags) and the runner env, remote-writing into a
// real Prometheus. Every k6_* sample of the run is then exported as OpenMetrics, the input
// of `promtool tsdb create-blocks-from openmetrics`; each runner's own end-of-test summary
// (what k6 computed over its segment) goes beside it, for the test to compare with.
//   node test/deploy/record-k6-run.ts   (writes fixtures/three-runners.om and .summaries.json)
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderTestRun, SCENARIO_KEY } from '../../loadtest/k8s/testrun.ts';
import { freePort, ProcessGroup, waitForHealthy } from '../../loadtest/stack/processes.ts';
import { startPrometheus } from '../../loadtest/stack/prometheus.ts';
import { loadScenario } from '../../loadtest/scenario/schema.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = join(here, '..', '..');
const SCENARIO = join(here, 'fixtures', 'three-runners.json');
const OUTPUT = join(here, 'fixtures', 'three-runners.om');
const SUMMARIES = join(here, 'fixtures', 'three-runners.summaries.json');
const RUN_ID = 'three-runners-rec';
const PARALLELISM = 3;

interface Env {
  name: string;
  value: string;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'qs-k6-record-'));
  const group = new ProcessGroup(work);
  try {
    const mockPort = await freePort();
    const agentPort = await freePort();
    const node = process.execPath;
    group.start('mock-provider', node, [join(repo, 'cli/quotascope.ts'), 'mock-provider', `--port=${mockPort}`, '--ttft=fixed:40', '--per-token-ms=fixed:1', '--output-tokens=fixed:60']);
    group.start('agent', node, [join(repo, 'cli/quotascope.ts'), 'agent', `--port=${agentPort}`, `--provider-url=http://127.0.0.1:${mockPort}`, '--permits=3', '--max-wait-ms=600']);
    await waitForHealthy('mock-provider', `http://127.0.0.1:${mockPort}/healthz`, 30_000, () => group.assertRunning());
    await waitForHealthy('agent', `http://127.0.0.1:${agentPort}/healthz`, 60_000, () => group.assertRunning());
    const prometheus = await startPrometheus(group, { jobs: {}, dataDir: join(work, 'prometheus') });

    const rendered = renderTestRun(loadScenario(SCENARIO), {
      name: RUN_ID,
      parallelism: PARALLELISM,
      target: `http://127.0.0.1:${agentPort}`,
      remoteWriteUrl: `${prometheus}/api/v1/write`,
      runId: RUN_ID,
      pushIntervalSeconds: 1,
    });
    // The runners' /test: every key of the ConfigMap as a file.
    const mount = join(work, 'test');
    mkdirSync(mount);
    for (const [file, text] of Object.entries(rendered.configMap.data as Record<string, string>)) writeFileSync(join(mount, file), text);
    const spec = (rendered.testRun as { spec: { arguments: string; script: { configMap: { file: string } }; runner: { env: Env[] } } }).spec;
    const env: Record<string, string> = Object.fromEntries(spec.runner.env.map((e) => [e.name, e.value]));
    env.SCENARIO_FILE = join(mount, SCENARIO_KEY);

    const k6 = requireTool('k6');
    const started = Date.now();
    const runners: ChildProcess[] = [];
    for (const [i, { segment, sequence }] of rendered.segments.entries()) {
      // k6-operator's runner argv (pkg/resources/jobs/runner.go), with a loopback REST address.
      const args = [
        'run',
        '--quiet',
        `--execution-segment=${segment}`,
        `--execution-segment-sequence=${sequence}`,
        ...spec.arguments.split(/\s+/),
        join(mount, spec.script.configMap.file),
        `--address=127.0.0.1:${await freePort()}`,
        '--tag',
        `instance_id=${i + 1}`,
        '--tag',
        `testrun_name=${RUN_ID}`,
      ];
      const reportDir = join(work, `runner-${i + 1}`);
      mkdirSync(reportDir);
      const child = spawn(k6, args, { env: { ...process.env, ...env, REPORT_DIR: reportDir }, stdio: ['ignore', 'inherit', 'inherit'] });
      runners.push(child);
    }
    const codes = await Promise.all(runners.map(async (c) => (await once(c, 'exit'))[0] as number));
    if (codes.some((c) => c !== 0)) throw new Error(`k6 runners exited with ${codes.join(', ')}`);
    await new Promise((r) => setTimeout(r, 3_000)); // the last remote-write push
    const seconds = Math.ceil((Date.now() - started) / 1000) + 60;

    const res = await fetch(`${prometheus}/api/v1/query?${new URLSearchParams({ query: `{__name__=~"k6_.+",testid="${RUN_ID}"}[${seconds}s]` })}`);
    const body = (await res.json()) as { data: { result: { metric: Record<string, string>; values: [number, string][] }[] } };
    writeFileSync(OUTPUT, openMetrics(body.data.result));
    console.log(`wrote ${body.data.result.length} series to ${OUTPUT}`);
    const summaries = rendered.segments.map(({ segment }, i) => {
      const metrics = JSON.parse(readFileSync(join(work, `runner-${i + 1}`, 'k6-summary.json'), 'utf8')).metrics;
      return {
        instance_id: String(i + 1),
        segment,
        http_reqs: metrics.http_reqs.values,
        qs_request_duration: metrics.qs_request_duration.values,
        qs_missing_branches: metrics.qs_missing_branches.values,
      };
    });
    writeFileSync(SUMMARIES, `${JSON.stringify(summaries, null, 2)}\n`);
  } finally {
    await group.stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Samples as OpenMetrics text: series grouped by name, samples in time order, untyped. */
function openMetrics(series: { metric: Record<string, string>; values: [number, string][] }[]): string {
  const byName = new Map<string, typeof series>();
  for (const s of series) byName.set(s.metric.__name__, [...(byName.get(s.metric.__name__) ?? []), s]);
  const lines: string[] = [];
  for (const [name, list] of [...byName.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`# TYPE ${name} unknown`);
    for (const s of list) {
      const labels = Object.entries(s.metric)
        .filter(([k]) => k !== '__name__')
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(',');
      for (const [t, v] of s.values) lines.push(`${name}{${labels}} ${v} ${t}`);
    }
  }
  lines.push('# EOF');
  return `${lines.join('\n')}\n`;
}

if (import.meta.main) await main();
