// `quotascope sweep`: measured capacity beside the plan. start's stack once, several steady
// rates on it (double, then bisect), the knee with a ±, sweep.json and a page with a chart.
import { Command } from 'commander';
import { type SweepOptions, sweepOptionsSchema } from '../loadtest/sweep/sweep-options.ts';
import { UsageError } from './errors.ts';
import { type FlagSpecs, FlagSet } from './flags.ts';
import { START_FLAGS } from './start.ts';

const field = sweepOptionsSchema.shape;
const { scenario: _scenario, duration: _duration, rate: _rate, burstUsers: _burstUsers, ...STACK_FLAGS } = START_FLAGS;

const FLAGS: FlagSpecs<keyof SweepOptions> = {
  ...STACK_FLAGS,
  tree: { ...STACK_FLAGS.tree, help: "agent tree every request calls; with --agent the served app's name", defaultText: "review; with --agent the module's name" },
  requestDeadlineMs: { ...STACK_FLAGS.requestDeadlineMs, defaultText: "start's deadline for the tree, scaled like the call time (x call-seconds / 8)" },
  callSeconds: { flag: 'call-seconds', help: "model call latency at the mock, s (the worked example's 8 s scaled down so a sweep fits in minutes)", schema: field.callSeconds, value: 's' },
  sloP95: { flag: 'slo-p95', help: "a knee step's served requests must have a p95 within this, s", schema: field.sloP95, value: 's', defaultText: "60 s scaled like the call time (60 x call-seconds / 8), or 1.5 x the tree's critical path when longer" },
  maxPartial: { flag: 'max-partial', help: 'a knee step may leave at most this percent of its requests partial', schema: field.maxPartial, value: 'pct' },
  require: { flag: 'require', help: 'exit 1 when the measured knee serves fewer user requests/min than this (a capacity gate for CI)', schema: field.require, value: 'n' },
  windowSeconds: { flag: 'window-seconds', help: "seconds each step measures after its warm-up (a provider quota window by default)", schema: field.windowSeconds, value: 's' },
  maxSteps: { flag: 'max-steps', help: 'search steps at most (doubling and bisection), repeats aside', schema: field.maxSteps, value: 'n' },
  repeats: { flag: 'repeats', help: "extra steps at the knee's rate, for its ±", schema: field.repeats, value: 'n' },
  startRate: { flag: 'start-rate', help: 'the first rate probed, user requests/min', schema: field.startRate, value: 'n', defaultText: "half the plan's capacity" },
};

export function sweepCommand(): Command {
  const command = new Command('sweep').description("measure the rate a tree sustains on start's stack (double, then bisect steady rates) and set it beside the plan");
  const flags = new FlagSet(command, FLAGS);
  command.action(async () => {
    const parsed = sweepOptionsSchema.safeParse(flags.values());
    if (!parsed.success) throw new UsageError(flags.describe(parsed.error));
    const [{ runSweep }, { AgentTargetError }, { UnservedTreeError }] = await Promise.all([
      import('../loadtest/sweep/run-sweep.ts'),
      import('../loadtest/stack/agent-target.ts'),
      import('../loadtest/stack/served-trees.ts'),
    ]);
    try {
      process.exitCode = await runSweep(parsed.data);
    } catch (error) {
      if (error instanceof AgentTargetError || error instanceof UnservedTreeError) throw new UsageError(error.message);
      throw error;
    }
  });
  return command;
}
