// `npm start`: the embedded main job. Starts the mock provider, the agent service (or `serve`
// for a user's module, --agent) and Prometheus on loopback, replays a fan-out burst then
// steady traffic with k6 (or a small Node driver where k6 is missing), prints a summary and
// writes reports/<run-id>/. A run whose requests all failed exits 1.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
import { COUNTED_TOKEN_KINDS } from '../instrumentation/counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS } from '../instrumentation/defaults.ts';
import { limiterMetrics, MAX_WAIT_SECONDS_LIMIT } from '../instrumentation/metrics/definitions.ts';
import { runNodeDriver } from './k6/node-driver.ts';
import { RunProgress } from './k6/progress.ts';
import { type K6Summary, runK6 } from './k6/runner.ts';
import { formatStatusCounts } from './k6/summary-text.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, formatComparison } from './measure/plan-vs-measured.ts';
import { ALL_FAILED_EXIT_CODE, allFailedMessage, providerStatusCounts } from './measure/run-outcome.ts';
import { RUN_RECORD_FILE, type RunRecord, writeRunRecord } from './report/run-record.ts';
import { stackTotals } from './report/summary.ts';
import { writeReport } from './report/write.ts';
import { loadScenario, ScenarioError, treeNameSchema } from './scenario/schema.ts';
import { withTree } from './scenario/trees.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { type AgentTarget, AgentTargetError, defaultTreeOf, resolveAgentTarget, scenarioForTarget } from './stack/agent-target.ts';
import { MOCK_COUNTED_TOKENS } from './stack/mock-parameters.ts';
import { LOCAL_STACK_SCRAPE_SECONDS, startLocalStack } from './stack/local-stack.ts';
import { ProcessGroup } from './stack/processes.ts';
import { findTool } from './stack/tools.ts';

const USAGE = `usage: npm start -- [flags]
  --agent FILE[#export]  run your own ADK agent: a TS/JS module exporting it (export rootAgent by default),
                      served by serve with every model rate-limited, instead of the sample agent service
  --tree NAME         agent tree every request calls (default review, or the trees a --scenario names;
                      with --agent the served app's name, default the module's name)
  --scenario NAME     run this scenario file instead (name in loadtest/scenarios or a path)
  --duration S        seconds of steady traffic after the burst (default 300)
  --rate N            steady user requests per minute (default ${EX.userRequestsPerMinute}, the worked example)
  --burst-users N     users clicking at once at the start (default ${EX.burstUsers})
  --replicas N        agent service replicas sharing the budget (default ${EX.replicas})
  --quota-tpm N       provider tokens per minute (default ${EX.quotaTokensPerMinute})
  --quota-rpm N       provider requests per minute (default ${EX.quotaRequestsPerMinute})
  --call-seconds S    model call latency at the mock (default ${EX.callSeconds})
  --tokens N          input tokens per model call (default ${EX.inputTokensPerCall})
  --counted-tokens K  which tokens the quota counts: input (Gemini's TPM, default) or total; the mock,
                      the budget, the planner and the report all take it from here
  --permits N         permits per replica (default ${EX.permits})
  --max-wait-ms N     limiter maxWait (default ${EX.maxWaitMs})
  --report-dir DIR    where reports/<run-id> goes (default reports)`;

const flagsSchema = z.object({
  agent: z.string().min(1).max(4096).optional(),
  tree: treeNameSchema.optional(),
  scenario: z.string().min(1).optional(),
  duration: z.coerce.number().positive().max(86_400).default(300),
  rate: z.coerce.number().positive().max(100_000).default(EX.userRequestsPerMinute),
  'burst-users': z.coerce.number().int().min(0).max(10_000).default(EX.burstUsers),
  replicas: z.coerce.number().int().min(1).max(32).default(EX.replicas),
  'quota-tpm': z.coerce.number().int().positive().default(EX.quotaTokensPerMinute),
  'quota-rpm': z.coerce.number().int().positive().default(EX.quotaRequestsPerMinute),
  'call-seconds': z.coerce.number().positive().max(600).default(EX.callSeconds),
  tokens: z.coerce.number().int().min(101).max(1_000_000).default(EX.inputTokensPerCall),
  'counted-tokens': z.enum(COUNTED_TOKEN_KINDS).default(DEFAULT_COUNTED_TOKENS),
  permits: z.coerce.number().int().positive().max(10_000).default(EX.permits),
  'max-wait-ms': z.coerce.number().int().min(1).max(MAX_WAIT_SECONDS_LIMIT * 1000).default(EX.maxWaitMs),
  'report-dir': z.string().min(1).default('reports'),
});
type Flags = z.output<typeof flagsSchema>;

const OUTPUT_TOKENS = EX.outputTokensPerCall;
const BUDGET_FRACTION = EX.budgetFraction;
/** This run's Prometheus scrape interval, seconds. */
const SCRAPE_SECONDS = LOCAL_STACK_SCRAPE_SECONDS;
/** The panels' $__rate_interval: four scrape intervals. */
const RATE_INTERVAL = `${4 * SCRAPE_SECONDS}s`;
/** Share of a call's time the mock spends streaming output after the first token. */
const STREAMING_SHARE = 0.9;

function parseFlags(argv: string[]): Flags {
  const options = Object.fromEntries(Object.keys(flagsSchema.shape).map((k) => [k, { type: 'string' as const }]));
  const { values } = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean' } }, strict: true });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const result = flagsSchema.safeParse(values);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new Error(`--${String(issue.path[0])}: ${issue.message}`);
  }
  return result.data;
}

/** The default run: the worked example's burst of 10 users, then steady traffic. */
function mainScenario(f: Flags, tree: string): ScenarioFile {
  const burstGap = f['burst-users'] > 0 ? Math.max(10, f['call-seconds'] * 3) : 0;
  return {
    name: 'main',
    description: `burst of ${f['burst-users']} users, then ${f.rate} requests/min for ${f.duration} s`,
    defaults: { tree, inputTokensPerCall: f.tokens, trafficClass: 'interactive' },
    arrivals: [
      ...(f['burst-users'] > 0 ? [{ kind: 'burst' as const, at: 0, users: f['burst-users'] }] : []),
      { kind: 'constant', start: burstGap, perMinute: f.rate, duration: f.duration },
    ],
    requestTimeout: Math.max(60, (f['max-wait-ms'] / 1000 + f['call-seconds']) * 4),
    gracefulStop: Math.max(10, f['call-seconds'] * 4),
  };
}

const fmt = (v: number | undefined, unit = ''): string => (v === undefined ? '-' : `${Number.isInteger(v) ? v : v.toFixed(2)}${unit}`);

async function run(flags: Flags, target: AgentTarget, scenario: ScenarioFile, group: ProcessGroup, reportDir: string, runId: string, signal: AbortSignal): Promise<number> {
  console.log(`[main] run ${runId}: report in ${reportDir}`);
  // Quota and latency for this run: ~800 output tokens, call-seconds per call on average.
  const perTokenMs = (flags['call-seconds'] * 1000 * STREAMING_SHARE) / (OUTPUT_TOKENS - 1);
  const mockConfig = {
    requestsPerMinute: flags['quota-rpm'],
    tokensPerMinute: flags['quota-tpm'],
    countedTokens: MOCK_COUNTED_TOKENS[flags['counted-tokens']],
    timeToFirstTokenMs: { kind: 'fixed', value: Math.round(flags['call-seconds'] * 100) },
    perOutputTokenMs: { kind: 'fixed', value: perTokenMs },
    outputTokens: { kind: 'normal', mean: OUTPUT_TOKENS, stddev: 100 },
  };
  const { mockUrl, agentUrls, prometheusUrl } = await startLocalStack(group, {
    target,
    limits: {
      replicas: flags.replicas,
      permits: flags.permits,
      tokensPerMinute: Math.round(flags['quota-tpm'] * BUDGET_FRACTION),
      maxWaitMs: flags['max-wait-ms'],
      countedTokens: flags['counted-tokens'],
    },
    mockConfig,
    mockNote: `quota ${flags['quota-rpm']} req/min, ${flags['quota-tpm']} ${flags['counted-tokens']} tokens/min, ~${flags['call-seconds']} s per call`,
    prometheusDir: join(reportDir, 'prometheus'),
    scrapeIntervalSeconds: SCRAPE_SECONDS,
    say: (line) => console.log(`[main] ${line}`),
  });
  if (signal.aborted) return 130;

  // Permits in use sampled at random times (the periodic scrape can alias with k6's arrivals).
  const probe = new GaugeProbe({ urls: agentUrls.map((u) => `${u}/metrics`), metric: limiterMetrics.permitsInUse.name, meanIntervalMs: 200 });
  probe.start();
  let summary: K6Summary | undefined;
  let exitCode = 0;
  const startedAt = Date.now();
  let testStartedAt = startedAt;
  try {
    if (findTool('k6')) {
      const progress = new RunProgress({ scenario, prometheusUrl });
      await progress.start();
      const onLine = (line: string) => progress.log(`[k6] ${line}`);
      const r = await runK6({ scenario, target: agentUrls.join(','), reportDir, runId, prometheusUrl, mockUrl, onLine, onProgress: (p) => progress.update(p), signal }).finally(() => progress.stop());
      summary = r.summary;
      exitCode = r.exitCode;
      testStartedAt = r.testStartedAt;
    } else {
      console.log('[main] k6 is not installed (install it with: npm run tools); replaying the scenario with the Node driver');
      summary = await runNodeDriver(scenario, agentUrls[0], (l) => console.log(`[driver] ${l}`), signal);
    }
  } finally {
    await probe.stop();
  }
  if (signal.aborted) return 130;
  const endedAt = Date.now();
  await new Promise((r) => setTimeout(r, 3000)); // one more scrape after the last request

  const totals = await stackTotals(prometheusUrl, startedAt, Date.now());
  const failure = allFailedMessage(summary, await providerStatusCounts(prometheusUrl, startedAt, Date.now()));
  const agent =
    target.kind === 'serve' ? { app: target.app, module: target.spec, modelCallsPerRequest: target.modelCallsPerRequest ?? null, countNote: target.countNote } : undefined;
  const comparison = await compareRun({
    scenario,
    prometheusUrl,
    testStartedAt,
    endedAt,
    probe,
    agentUrl: agentUrls[0],
    stack: {
      outputTokensPerCall: OUTPUT_TOKENS,
      countedTokens: flags['counted-tokens'],
      latencySeconds: flags['call-seconds'],
      quotaRequestsPerMinute: flags['quota-rpm'],
      quotaTokensPerMinute: flags['quota-tpm'],
      budgetFraction: BUDGET_FRACTION,
      replicas: flags.replicas,
      maxWaitSeconds: flags['max-wait-ms'] / 1000,
      burstUsers: Math.max(1, flags['burst-users']),
    },
  });
  const record: RunRecord = {
    runId,
    scenario: scenario.name,
    flags: { ...flags, description: scenario.description ?? scenario.name },
    agent,
    range: { from: testStartedAt, to: Date.now() },
    rateInterval: RATE_INTERVAL,
    k6ExitCode: exitCode,
    failure,
    k6: summary,
    stack: totals,
    planVsMeasured: comparison,
    processes: group.children.map(({ name, child }) => ({ name, pid: child.pid })),
    probeSamples: probe.samples,
  };
  const { path: reportPath } = await writeReport({
    prometheusUrl,
    from: record.range.from,
    to: record.range.to,
    reportDir,
    runId,
    rateInterval: RATE_INTERVAL,
    probeSamples: record.probeSamples,
    parameters: { scenario: scenario.name, ...record.flags },
    totals,
    k6: summary,
    planVsMeasured: comparison,
  });
  writeRunRecord(reportDir, { ...record, report: reportPath });
  const a = totals.acquireSeconds;
  console.log(
    [
      '',
      `quotascope run ${runId} (${scenario.name})`,
      `  user requests:     ${totals.requests} (client saw ${summary?.requests ?? 0}, failed ${fmt(((summary?.failedRequests ?? 0) / Math.max(1, summary?.requests ?? 0)) * 100, '%')}, with missing branches ${fmt((summary?.missingBranchesRate ?? 0) * 100, '%')})`,
      `  HTTP statuses:     ${formatStatusCounts(summary?.statusCodes ?? {})}`,
      `  model calls:       ${totals.modelCalls} at the provider${agent?.modelCallsPerRequest ? ` (${agent.modelCallsPerRequest} per request counted in ${agent.app})` : agent ? ` (${agent.app}: ${agent.countNote})` : ''}`,
      `  429s:              ${totals.providerRateLimited} answered by the provider, ${totals.limiterRateLimited} seen by the limiter`,
      `  acquire time:      p50 ${fmt(a.p50, ' s')}  p95 ${fmt(a.p95, ' s')}  p99 ${fmt(a.p99, ' s')} (admitted calls; maxWait ${fmt(totals.maxWaitSeconds, ' s')})`,
      `  limiter timeouts:  ${totals.timeouts} (gave up at maxWait)`,
      `  request duration:  p50 ${fmt((summary?.durationMs.p50 ?? 0) / 1000, ' s')}  p95 ${fmt((summary?.durationMs.p95 ?? 0) / 1000, ' s')}`,
      `  alerts fired:      ${totals.alertsFired.length ? totals.alertsFired.join(', ') : 'none'}`,
      'skipped' in comparison ? `plan vs measured: skipped (${comparison.skipped})` : formatComparison(comparison),
      `  run record:        ${join(reportDir, RUN_RECORD_FILE)}`,
      `report: ${reportPath}`,
    ].join('\n'),
  );
  if (failure) {
    console.error(`npm start: ${failure}`);
    return ALL_FAILED_EXIT_CODE;
  }
  // A failed threshold is the run's verdict (exit 99); anything else but 0 is an error.
  return exitCode;
}

async function main(): Promise<number> {
  let flags: Flags;
  let target: AgentTarget;
  let scenario: ScenarioFile;
  try {
    flags = parseFlags(process.argv.slice(2));
    target = await resolveAgentTarget({ agent: flags.agent, tree: flags.tree });
    const tree = flags.tree ?? defaultTreeOf(target);
    // --tree sends every request of a scenario file to that tree too.
    const chosen = flags.scenario ? loadScenario(flags.scenario) : mainScenario(flags, tree);
    scenario = scenarioForTarget(target, flags.tree ? withTree(chosen, tree) : chosen);
  } catch (e) {
    console.error(`npm start: ${(e as Error).message}`);
    if (!(e instanceof ScenarioError || e instanceof AgentTargetError)) console.error(USAGE);
    return 2;
  }
  const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${scenario.name}`;
  const reportDir = resolve(flags['report-dir'], runId);
  mkdirSync(reportDir, { recursive: true });
  const group = new ProcessGroup(reportDir);
  const aborter = new AbortController();
  let finished: Promise<unknown> = Promise.resolve();
  let stopping = false;
  // Ctrl-C / SIGTERM: stop k6 (SIGINT, SIGKILL after 10 s) and every child, wait until the run
  // has wound down, then exit 130. A second signal exits at once (the children are signalled).
  const onSignal = (sig: string) => {
    if (stopping) process.exit(130);
    stopping = true;
    console.log(`\n[main] ${sig}: stopping the run and every process it started…`);
    aborter.abort();
    const deadline = new Promise((r) => setTimeout(r, 15_000).unref());
    void Promise.all([group.stopAll(), Promise.race([finished, deadline])]).then(() => process.exit(130));
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  const running = run(flags, target, scenario, group, reportDir, runId, aborter.signal)
    .catch((e) => {
      if (aborter.signal.aborted) return 130;
      console.error(`[main] failed: ${(e as Error).message}`);
      return 1;
    })
    .finally(() => group.stopAll());
  finished = running;
  return running;
}

process.exitCode = await main();
