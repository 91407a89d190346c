// Benchmark of the capacity planner: how many plans per second, against validating the input
// alone (the zod parse every plan starts with) as the baseline.
import { Bench } from 'tinybench';
import type { Task } from 'tinybench';
import { formatPlan, parsePlanInput, plan, reviewAgentExample } from '../loadtest/planner/index.ts';
import type { BenchModule, BenchRow } from './types.ts';

const group = 'capacity planner, review-agent example';

function row(task: Task, baseline: boolean): BenchRow {
  const result = task.result;
  if (result.state !== 'completed') throw new Error(`bench task '${task.name}' ended ${result.state}`);
  return {
    group,
    name: task.name,
    baseline,
    opsPerSec: 1000 / result.period,
    meanNs: result.period * 1e6,
    extra: { p99Ns: Math.round(result.latency.p99 * 1e6), samples: result.latency.samplesCount },
  };
}

const benchPlanner: BenchModule = async () => {
  // Keep results alive so the engine cannot drop the work.
  let sink = 0;
  const bench = new Bench({ time: 400, warmupTime: 100 });
  bench
    .add('validate the input only (zod parse)', () => {
      sink += parsePlanInput(reviewAgentExample).replicas;
    })
    .add('plan()', () => {
      sink += plan(reviewAgentExample).perReplica.permits;
    })
    .add('plan() + table', () => {
      sink += formatPlan(plan(reviewAgentExample)).length;
    });
  await bench.run();
  if (sink === 0) throw new Error('planner bench computed nothing');
  const [validate, planOnly, withTable] = bench.tasks;
  return [row(validate, true), row(planOnly, false), row(withTable, false)];
};

export default benchPlanner;
