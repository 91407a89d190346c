// `npm start` (`quotascope start`): the embedded main job. Starts the mock provider, the agent
// service (or `serve` for a user's module, --agent) and Prometheus on loopback, replays a
// fan-out burst then steady traffic with k6 (or a small Node driver where k6 is missing),
// prints a summary and writes reports/<run-id>/. A run whose requests all failed exits 1.
// The run is built from the flags once (run-spec.ts), run by run-pipeline.ts, and printed here.
import { type RunReporter, type RunResult, runPipeline } from './run-pipeline.ts';
import { withForwardRun } from './planner/forward-plan.ts';
import { buildRunSpec } from './run-spec.ts';
import type { StartOptions } from './start-options.ts';
import { startSummary } from './start-summary.ts';

const say = (line: string) => console.log(`[main] ${line}`);

/**
 * The whole run; resolves to the exit code. Before starting anything it throws ScenarioError
 * for a bad --scenario, AgentTargetError for an --agent that does not load or walk, and
 * UnservedTreeError for a tree the agent side does not serve.
 */
export async function runStart(flags: StartOptions): Promise<number> {
  const built = await buildRunSpec(flags);
  for (const note of built.notes) say(note);
  if ('refused' in built) {
    console.error(`start: --request-deadline-ms: ${built.refused}`);
    return 2;
  }
  const reporter: RunReporter = { say, out: process.stdout, begin: ({ runId, reportDir }) => say(`run ${runId}: report in ${reportDir}`) };
  let result: RunResult;
  try {
    // The plan's served rate: the tree run forward through one replica's door, once the notes are said.
    result = await runPipeline(await withForwardRun(built.spec.input, built.spec.flags.tokens, say), reporter);
  } catch (e) {
    console.error(`[main] failed: ${(e as Error).message}`);
    return 1;
  }
  if (result.aborted) return result.exitCode;
  console.log(startSummary(result, built.spec.scenario, flags.quotaSharing));
  if (result.problem) console.error(`start: ${result.problem.message}`);
  // A failed threshold is the run's verdict (exit 99); anything else but 0 is an error.
  return result.exitCode;
}
