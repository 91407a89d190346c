// `quotascope start` (`npm start`): the mock provider, the agent service and Prometheus on
// loopback, a fan-out burst then steady traffic, a summary and reports/<run-id>/.
import { Command } from 'commander';
import { DEFAULT_STEADY_SECONDS, defaultSteadySeconds, OWN_TREE_STEADY_QUOTA_WINDOWS, type StartOptions, startOptionsSchema } from '../loadtest/start-options.ts';
import { UsageError } from './errors.ts';
import { FlagSet, type FlagSpecs, optionFlag, perModelFlag } from './flags.ts';

const field = startOptionsSchema.shape;

/** start's flags; sweep takes its stack flags from here. */
export const START_FLAGS: FlagSpecs<keyof StartOptions> = {
  agent: {
    flag: 'agent',
    help: 'run your own ADK agent: a TS/JS module exporting it (export rootAgent by default), served by serve with every model rate-limited, instead of the sample agent service',
    schema: field.agent,
    value: 'file[#export]',
  },
  tree: {
    flag: 'tree',
    help: 'agent tree every request calls (with --scenario too); with --agent the served app\'s name',
    schema: field.tree,
    value: 'name',
    defaultText: "review, or the trees the scenario names; with --agent the module's name",
  },
  scenario: { flag: 'scenario', help: 'run this scenario instead (a name in loadtest/scenarios or a path)', schema: field.scenario, value: 'name|file' },
  duration: {
    flag: 'duration',
    help: 'seconds of steady traffic after the burst',
    schema: field.duration,
    value: 's',
    defaultText: `${DEFAULT_STEADY_SECONDS}; with --agent under request admission ${defaultSteadySeconds(true, { admission: 'request' })} (${OWN_TREE_STEADY_QUOTA_WINDOWS} quota windows)`,
  },
  rate: { flag: 'rate', help: 'steady user requests per minute', schema: field.rate, value: 'n' },
  burstUsers: { flag: 'burst-users', help: 'users clicking at once at the start', schema: field.burstUsers, value: 'n' },
  replicas: { flag: 'replicas', help: 'agent service replicas sharing the budget', schema: field.replicas, value: 'n' },
  quotaTpm: perModelFlag(
    'quota-tpm',
    'provider tokens per minute of each model: N, or MODEL=N,MODEL=N (N,MODEL=N: N for the others); the mock, the limiters and the planner take it from here',
    field.quotaTpm,
  ),
  quotaRpm: perModelFlag('quota-rpm', 'provider requests per minute of each model, likewise', field.quotaRpm),
  quotaScope: {
    flag: 'quota-scope',
    help: "the quota's scope: model (each model its own quota, as Gemini counts) or key (every model shares one quota and one budget)",
    schema: field.quotaScope,
    value: 'scope',
  },
  quotaSharing: {
    flag: 'quota-sharing',
    help: 'how the replicas share the quota: static (each its share), central (one window in a redis-server that start runs on loopback and stops), adaptive (each learns its share from 429s)',
    schema: field.quotaSharing,
    value: 'mode',
  },
  callSeconds: { flag: 'call-seconds', help: 'model call latency at the mock, seconds', schema: field.callSeconds, value: 's' },
  tokens: { flag: 'tokens', help: 'input tokens per model call', schema: field.tokens, value: 'n' },
  permits: optionFlag('permits', field.permits),
  maxWaitMs: optionFlag('maxWaitMs', field.maxWaitMs),
  admission: optionFlag('admission', field.admission),
  requestDeadlineMs: optionFlag('requestDeadlineMs', field.requestDeadlineMs),
  countedTokens: optionFlag('countedTokens', field.countedTokens, {
    help: 'which tokens the quota counts: the mock, the budget, the planner and the report all take it from here',
  }),
  reportDir: { flag: 'report-dir', help: 'where reports/<run-id> goes', schema: field.reportDir, value: 'dir' },
};

export function startCommand(): Command {
  const command = new Command('start').description('run the whole stack on loopback: a fan-out burst, then steady traffic, a summary and a report');
  const flags = new FlagSet(command, START_FLAGS);
  command.action(async () => {
    const parsed = startOptionsSchema.safeParse(flags.values());
    if (!parsed.success) throw new UsageError(flags.describe(parsed.error));
    const options = parsed.data;
    const [{ runStart }, { ScenarioError }, { AgentTargetError }, { UnservedTreeError }] = await Promise.all([
      import('../loadtest/main.ts'),
      import('../loadtest/scenario/schema.ts'),
      import('../loadtest/stack/agent-target.ts'),
      import('../loadtest/stack/served-trees.ts'),
    ]);
    try {
      process.exitCode = await runStart(options);
    } catch (error) {
      if (error instanceof ScenarioError) throw new UsageError(`${flags.nameOf('scenario')}: ${error.message}`);
      // Their messages name the flag (--agent: …) or the tree and what is served.
      if (error instanceof AgentTargetError || error instanceof UnservedTreeError) throw new UsageError(error.message);
      throw error;
    }
  });
  return command;
}
