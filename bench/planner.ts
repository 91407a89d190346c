// Benchmark of the capacity planner: how many plans per second, against validating the input
// alone (the zod parse every plan starts with) as the baseline.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Bench } from 'tinybench';
import type { Task } from 'tinybench';
import { formatPlan, parsePlanInput, plan, reviewAgentExample } from '../loadtest/planner/index.ts';
import type { BenchModule, BenchRow } from './types.ts';

const group = 'capacity planner, review-agent example';
const processGroup = 'planner CLI as a whole process (node startup included)';
const bin = fileURLToPath(new URL('../cli/quotascope.ts', import.meta.url));
const processRuns = 8;

/** Mean wall time of running `node args…` to completion, as a row of the process group. */
function processRow(name: string, args: readonly string[], baseline: boolean): BenchRow {
  execFileSync(process.execPath, args); // warm the file system cache
  const started = performance.now();
  for (let i = 0; i < processRuns; i++) execFileSync(process.execPath, args);
  const meanMs = (performance.now() - started) / processRuns;
  return { group: processGroup, name, baseline, opsPerSec: 1000 / meanMs, meanNs: meanMs * 1e6, extra: { runs: processRuns } };
}

function row(task: Task, baseline: boolean): BenchRow {
  const result = task.result;
  if (result.state !== 'completed') throw new Error(`bench task '${task.name}' ended ${result.state}`);
  return {
    group,
    name: task.name,
    baseline,
    opsPerSec: 1000 / result.period,
    meanNs: result.period * 1e6,
    extra: {
      p99Ns: Math.round(result.latency.p99 * 1e6),
      samples: result.latency.samplesCount,
      rmePercent: Number(result.latency.rme.toFixed(2)),
    },
  };
}

function addTasks(bench: Bench, keep: (n: number) => void): Bench {
  return bench
    .add('validate the input only (zod parse)', () => keep(parsePlanInput(reviewAgentExample).replicas))
    .add('plan()', () => keep(plan(reviewAgentExample).perReplica.permits))
    .add('plan() + table', () => keep(formatPlan(plan(reviewAgentExample)).length));
}

const benchPlanner: BenchModule = async () => {
  // Keep results alive so the engine cannot drop the work.
  let sink = 0;
  const keep = (n: number) => {
    sink += n;
  };
  // One unmeasured pass first, so every task is compiled before any is measured: otherwise
  // the first task (the baseline) pays for the warm-up of code the others share.
  await addTasks(new Bench({ time: 200, warmup: false }), keep).run();
  const bench = addTasks(new Bench({ time: 500, warmupTime: 100 }), keep);
  await bench.run();
  if (sink === 0) throw new Error('planner bench computed nothing');
  const [validate, planOnly, withTable] = bench.tasks;
  return [
    row(validate, true),
    row(planOnly, false),
    row(withTable, false),
    processRow('node -e 0 (an empty process)', ['-e', '0'], true),
    processRow('quotascope plan --example review-agent --json', [bin, 'plan', '--example', 'review-agent', '--json'], false),
  ];
};

export default benchPlanner;
