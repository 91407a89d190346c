// The run `start` makes of its flags, built once before anything starts: the agent side
// resolved once (the module loaded, its tree walked, counted and calibrated), the tree's
// timing, the flags fitted to the tree, the scenario as the target runs it, and the
// pipeline's input. runStart (main.ts) runs it and prints what the pipeline found.
import { criticalPathSeconds, treeTiming } from './measure/steady-state.ts';
import { deadlineNote, type FittedFlags, fitRunToTree, mainScenario } from './run-fit.ts';
import type { RunInput } from './run-pipeline.ts';
import { loadScenario } from './scenario/schema.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { type AgentTarget, resolveRunTarget } from './stack/agent-target.ts';
import { scenarioForTarget } from './stack/target-scenario.ts';
import { OUTPUT_TOKENS, startInput } from './start-input.ts';
import { DEFAULT_STEADY_SECONDS, type StartOptions } from './start-options.ts';

/** A `start` run, ready to run. */
export interface RunSpec {
  /** The flags fitted to the tree (the steady phase's length chosen for it, or lengthened where too short for it). */
  readonly flags: FittedFlags;
  readonly target: AgentTarget;
  /** The tree the run's requests call. */
  readonly tree: string;
  readonly scenario: ScenarioFile;
  readonly input: RunInput;
}

/** The run built from the flags, or why it is refused before it starts; `notes` are said first, in order. */
export type BuiltRun = { readonly notes: readonly string[] } & ({ readonly spec: RunSpec } | { readonly refused: string });

/**
 * Builds the run from the flags. Throws ScenarioError for a bad --scenario, AgentTargetError
 * for an --agent that does not load or walk, and UnservedTreeError for a tree the agent side
 * does not serve; refuses a --request-deadline-ms no admitted request could finish in.
 */
export async function buildRunSpec(flags: StartOptions): Promise<BuiltRun> {
  // The tree's own prompts (one request with its session history) size the plan per model.
  const { target, tree, shape } = await resolveRunTarget({ agent: flags.agent, tree: flags.tree, calibrate: { messageTokens: flags.tokens, outputTokensPerCall: OUTPUT_TOKENS } });
  const criticalPath = shape ? criticalPathSeconds(shape, flags.callSeconds) : 0;
  const timing = treeTiming(criticalPath, flags);
  // A scenario file has its own phases; --duration is not read.
  const fitted = flags.scenario ? { flags: { ...flags, duration: flags.duration ?? DEFAULT_STEADY_SECONDS }, criticalPath: 0 } : fitRunToTree(flags, shape, tree, timing, target.kind === 'serve');
  // The agent side refuses such a deadline at start too: said before anything starts.
  const tooShort = deadlineNote(fitted.flags, shape, tree, timing);
  const notes = [...(target.kind === 'serve' && target.calibrationNote ? [target.calibrationNote] : []), ...(fitted.note ? [fitted.note] : [])];
  if (tooShort) return { notes, refused: tooShort };
  const chosen = !flags.scenario ? mainScenario(fitted.flags, tree, timing) : loadScenario(flags.scenario);
  // --tree sends every request of a scenario file to that tree too.
  const scenario = scenarioForTarget(target, chosen, flags.tree ? tree : undefined);
  return { notes, spec: { flags: fitted.flags, target, tree, scenario, input: startInput(fitted.flags, target, scenario) } };
}
