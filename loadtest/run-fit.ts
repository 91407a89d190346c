// The built-in run fitted to its tree, from the tree's timing (steady-state.ts treeTiming,
// worked out once): the run lengthened where its steady phase would end before the requests
// it measures do, the request deadline no admitted request could finish in, and the default
// scenario whose timeouts cover the tree's critical path. Pure.
import type { TreeShape } from '../agent/tree-shapes.ts';
import { steadyWindow, type TreeTiming } from './measure/steady-state.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { DEFAULT_STEADY_SECONDS, defaultSteadySeconds, OWN_TREE_STEADY_QUOTA_WINDOWS, RUN_QUOTA_WINDOW_SECONDS, type StartOptions } from './start-options.ts';

type Flags = StartOptions;
/** The flags with the steady phase's length settled (fitRunToTree's). */
export type FittedFlags = Flags & { readonly duration: number };

/**
 * The default run: the worked example's burst of 10 users, then steady traffic. Requests get
 * time to finish: the timeout and k6's graceful stop cover the tree's critical path
 * (`timing.criticalPath` seconds) and a maxWait; under request admission the graceful stop
 * also covers the request deadline and one call, so a request admitted before the end
 * finishes (its wait at the door and its calls all end by its deadline).
 */
export function mainScenario(f: FittedFlags, tree: string, timing: Pick<TreeTiming, 'criticalPath' | 'requestDeadlineMs'>): ScenarioFile {
  const { criticalPath } = timing;
  const burstGap = f.burstUsers > 0 ? Math.max(10, f.callSeconds * 3) : 0;
  const maxWait = f.maxWaitMs / 1000;
  const admitted = f.admission === 'request' ? timing.requestDeadlineMs / 1000 + f.callSeconds : 0;
  return {
    name: 'main',
    description: `burst of ${f.burstUsers} users, then ${f.rate} requests/min for ${f.duration} s`,
    defaults: { tree, inputTokensPerCall: f.tokens, trafficClass: 'interactive' },
    arrivals: [
      ...(f.burstUsers > 0 ? [{ kind: 'burst' as const, at: 0, users: f.burstUsers }] : []),
      { kind: 'constant', start: burstGap, perMinute: f.rate, duration: f.duration },
    ],
    requestTimeout: Math.ceil(Math.max(60, (maxWait + f.callSeconds) * 4, 2 * criticalPath + maxWait, admitted)),
    gracefulStop: Math.ceil(Math.max(10, f.callSeconds * 4, criticalPath + maxWait, admitted)),
  };
}

/** Why a tree of the user's own got its steady phase: the quota windows steadyWindow leaves to settle and measures. */
function ownTreeNote(duration: number, tree: string, callSeconds: number): string {
  const w = steadyWindow({ arrival: { kind: 'constant', start: 0, perMinute: 1, duration }, tree, inputTokensPerCall: 1 }, callSeconds);
  const windows = (seconds: number) => Math.round(seconds / RUN_QUOTA_WINDOW_SECONDS);
  return `steady traffic for ${duration} s (${OWN_TREE_STEADY_QUOTA_WINDOWS} quota windows: ${tree}'s door settles over ${windows(w.from)}, and the last ${windows(w.to - w.from)} are measured; pass --duration to choose)`;
}

/**
 * The built-in run's steady phase settled for the tree: --duration where given, else
 * defaultSteadySeconds (`ownTree`: the tree is a module of the user's own), and lengthened
 * where shorter than minimumSteadySeconds (it would end before the requests it measures do).
 * Returns the flags to run with and, when it chose or lengthened the phase for the tree, why
 * (said before anything starts).
 */
export function fitRunToTree(f: Flags, shape: TreeShape | undefined, tree: string, timing: TreeTiming, ownTree = false): { flags: FittedFlags; criticalPath: number; note?: string } {
  const chosen = f.duration ?? defaultSteadySeconds(ownTree, f);
  const byDefault = f.duration === undefined && chosen !== DEFAULT_STEADY_SECONDS ? ownTreeNote(chosen, tree, f.callSeconds) : undefined;
  if (!shape) return { flags: { ...f, duration: chosen }, criticalPath: 0 };
  const { criticalPath, minimumSteadySeconds: minimum } = timing;
  if (chosen >= minimum) return { flags: { ...f, duration: chosen }, criticalPath, ...(byDefault ? { note: byDefault } : {}) };
  const chain = shape.depth ?? shape.callsPerBranch + shape.sequentialSteps;
  const note =
    `--duration ${chosen} s is too short for ${tree}: its critical path is ${chain} model call${chain === 1 ? '' : 's'} one after another × ${f.callSeconds} s = ${Number(criticalPath.toFixed(1))} s, ` +
    `and the steady window must see requests start and finish; lengthened to ${minimum} s (pass --duration ${minimum} or more to choose)`;
  return { flags: { ...f, duration: minimum }, criticalPath, note };
}

/**
 * Under request admission, why no admitted request of the tree can finish: its request
 * deadline is shorter than the tree's critical path (a call that cannot finish before the
 * deadline is not started). Said before the run starts; undefined when the deadline is long enough.
 */
export function deadlineNote(f: Flags, shape: TreeShape | undefined, tree: string, timing: TreeTiming): string | undefined {
  // Unset, the deadline follows the tree (twice its critical path when that is longer than the default).
  if (!shape || f.admission !== 'request' || f.requestDeadlineMs === undefined) return undefined;
  const { criticalPath } = timing;
  if (f.requestDeadlineMs / 1000 > criticalPath) return undefined;
  return (
    `the request deadline (${f.requestDeadlineMs / 1000} s) is not longer than ${tree}'s critical path (${Number(criticalPath.toFixed(1))} s at ${f.callSeconds} s per call): ` +
    `no admitted request can finish in time, so the run will shed or cut short every one; pass --request-deadline-ms ${timing.chainDeadlineMs} (twice the critical path) to give requests room`
  );
}
