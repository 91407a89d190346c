// `quotascope loadtest <scenario>`: its flags (the run itself is loadtest/run-scenario.ts;
// `--k8s` is cli/k8s-loadtest.ts, with flags of its own). An --agent module is loaded and its
// tree walked here, before anything starts.
import { readdirSync } from 'node:fs';
import { Command } from 'commander';
import { z } from 'zod';
import { WORKED_EXAMPLE } from '../agent/worked-example.ts';
import { adkTargetSchema, SCENARIOS_DIR } from '../loadtest/scenario/schema.ts';
import { UsageError } from './errors.ts';
import { FlagSet, type FlagSpec } from './flags.ts';

const httpUrl = z.url({ protocol: /^https?$/ });

const FLAGS = {
  target: {
    flag: 'target',
    value: 'urls',
    help: 'agent service base URL; several comma-separated replicas are spread over',
    schema: z.string().min(1).optional(),
    defaultText: 'http://127.0.0.1:8080',
  },
  agent: {
    flag: 'agent',
    value: 'file[#export]',
    help: "start a stack of your own instead (mock provider, serve for the module's root agent, Prometheus), run against it (every request goes to the served app) and compare with the planner as --plan does; --app names the served app",
    schema: z.string().min(1).max(4096).optional(),
  },
  prometheus: { flag: 'prometheus', value: 'url', help: "remote-write k6's metrics to this Prometheus (needs --web.enable-remote-write-receiver)", schema: httpUrl.optional() },
  mockUrl: { flag: 'mock-url', value: 'url', help: 'mock provider base URL, for scenarios that change its quota and for --plan', schema: httpUrl.default('http://127.0.0.1:8090') },
  scale: { flag: 'scale', value: 'f', help: 'multiply every time in the scenario by F (0.1 = ten times faster)', schema: z.number().positive().max(1000).default(1) },
  load: { flag: 'load', value: 'f', help: 'multiply users and rates by F', schema: z.number().positive().max(1000).default(1) },
  reportDir: { flag: 'report-dir', value: 'dir', help: 'reports go to DIR/<run-id>', schema: z.string().min(1).default('reports') },
  replicas: { flag: 'replicas', value: 'n', help: 'agent replicas sharing the budget, for --plan', schema: z.int().positive().max(1000).optional(), defaultText: 'the number of --target URLs; with --agent the serve replicas to start, 1' },
  protocol: {
    flag: 'protocol',
    value: 'name',
    help: 'native: POST /v1/agents/{tree}/run; adk: an ADK API server (sessions, then /run or /run_sse)',
    schema: z.enum(['native', 'adk']).optional(),
    defaultText: "the scenario's, else native",
  },
  app: {
    flag: 'app',
    value: 'name',
    help: "with --protocol adk: the app to call, as the server's GET /list-apps lists it; with --agent the served app's name (default the module's name)",
    schema: adkTargetSchema.shape.app.optional(),
  },
  basePath: { flag: 'base-path', value: 'path', help: "with --protocol adk: prefix of the server's routes, e.g. /api for ADK Go", schema: adkTargetSchema.shape.basePath },
  budgetFraction: { flag: 'budget-fraction', value: 'f', help: "share of the quota the agents' budget was set to, for --plan", schema: z.number().positive().max(1).default(WORKED_EXAMPLE.budgetFraction) },
} as const satisfies Record<string, FlagSpec>;

type Options = { -readonly [K in keyof typeof FLAGS]: z.output<(typeof FLAGS)[K]['schema']> };

function scenarioNames(): string {
  try {
    return readdirSync(SCENARIOS_DIR)
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace(/\.json$/, ''))
      .join(', ');
  } catch {
    return '';
  }
}

async function run(scenarioName: string, flags: Options, wantPlan: boolean): Promise<number> {
  const [
    { loadScenario, ScenarioError },
    { scaleScenario },
    { withProtocol },
    { runScenario, ScenarioRunError },
    { AgentTargetError, resolveAgentTarget },
    { scenarioForTarget },
    { UnservedTreeError },
  ] = await Promise.all([
    import('../loadtest/scenario/schema.ts'),
    import('../loadtest/scenario/scale.ts'),
    import('../loadtest/scenario/protocol.ts'),
    import('../loadtest/run-scenario.ts'),
    import('../loadtest/stack/agent-target.ts'),
    import('../loadtest/stack/target-scenario.ts'),
    import('../loadtest/stack/served-trees.ts'),
  ]);
  if (flags.agent !== undefined && (flags.target !== undefined || flags.prometheus !== undefined)) {
    throw new UsageError('--agent starts its own stack: leave out --target and --prometheus');
  }
  // --agent: the module loads and its tree walks before anything starts.
  let agent: Awaited<ReturnType<typeof resolveAgentTarget>> | undefined;
  try {
    agent = flags.agent === undefined ? undefined : await resolveAgentTarget({ agent: flags.agent, tree: flags.app });
  } catch (error) {
    if (error instanceof AgentTargetError) throw new UsageError(error.message);
    throw error;
  }
  // With --agent, --app names the served app (the scenario is sent to it below).
  const app = agent?.kind === 'serve' ? (flags.protocol === 'adk' ? agent.app : undefined) : flags.app;
  let scenario: ReturnType<typeof loadScenario>;
  try {
    scenario = scaleScenario(loadScenario(scenarioName), { time: flags.scale, load: flags.load });
  } catch (error) {
    if (error instanceof ScenarioError) throw new UsageError(`<scenario>: ${error.message}`);
    throw error;
  }
  try {
    scenario = withProtocol(scenario, { protocol: flags.protocol, app, basePath: flags.basePath });
    if (agent) scenario = scenarioForTarget(agent, scenario);
  } catch (error) {
    if (error instanceof ScenarioError) throw new UsageError(error.message);
    throw error;
  }
  try {
    return await runScenario(scenario, { ...flags, agent, plan: wantPlan, parameters: { scenario: scenarioName, ...flags } });
  } catch (error) {
    // A target that does not serve the scenario's trees or app is a usage error too (nothing ran).
    if (error instanceof ScenarioRunError || error instanceof UnservedTreeError) throw new UsageError(error.message);
    throw error;
  }
}

export function loadtestCommand(): Command {
  const command = new Command('loadtest')
    .description('run one load-test scenario with k6 against a running stack or an ADK API server')
    .argument('<scenario>', `a name in loadtest/scenarios (${scenarioNames()}) or a path`)
    .option('--k8s', 'render a k6-operator TestRun for the scenario instead (or --evaluate a finished one); `loadtest <scenario> --k8s --help` lists its flags')
    .option('--plan', 'then print the plan beside the measured steady state (needs --prometheus scraping the agent service; quota and latency are read from --mock-url)');
  const flags = new FlagSet(command, FLAGS, { formerEnvPrefix: 'LOADTEST_' });
  command.action(async (scenario: string, options: { plan?: boolean }) => {
    process.exitCode = await run(scenario, flags.values() as Options, options.plan === true);
  });
  return command;
}
