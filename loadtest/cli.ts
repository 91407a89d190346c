// `npm run loadtest -- <scenario> [--target URL] [--prometheus URL] [--mock-url URL] [--scale F] [--load F] [--plan]
// [--protocol adk --app NAME [--base-path /api]]` runs one scenario with k6 against a running stack or an ADK API
// server (and with --plan compares it with the planner); with `--agent FILE[#export]` it starts
// its own stack (mock provider, serve for the module, Prometheus) and runs against that.
// `npm run loadtest -- convert-trace access.log [--out trace.jsonl]` turns the agent
// service's access log into a trace. A run whose requests all failed exits 1.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { WORKED_EXAMPLE } from '../agent/worked-example.ts';
import { defaultConfig, durationSeconds } from '../dashboards/config.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { RunProgress } from './k6/progress.ts';
import { runK6, THRESHOLDS_FAILED } from './k6/runner.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, formatComparison } from './measure/plan-vs-measured.ts';
import { ALL_FAILED_EXIT_CODE, allFailedMessage, providerStatusCounts } from './measure/run-outcome.ts';
import { rateIntervalFor } from './report/collect.ts';
import { type RunRecord, writeRunRecord } from './report/run-record.ts';
import { stackTotals } from './report/summary.ts';
import { writeReport } from './report/write.ts';
import { scaleScenario } from './scenario/scale.ts';
import { withProtocol } from './scenario/protocol.ts';
import { adkTargetSchema, loadScenario, ScenarioError } from './scenario/schema.ts';
import { convertAccessLog, toJsonLines } from './scenario/trace-convert.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { AgentTargetError, resolveAgentTarget, scenarioForTarget } from './stack/agent-target.ts';
import { LOCAL_STACK_SCRAPE_SECONDS, type LocalStack, startLocalStack } from './stack/local-stack.ts';
import { fetchMockParameters, type MockParameters } from './stack/mock-parameters.ts';
import { ProcessGroup } from './stack/processes.ts';
import { checkTargetsServe, UnservedTreeError } from './stack/served-trees.ts';
import { ToolMissingError } from './stack/tools.ts';

const USAGE = `usage: npm run loadtest -- <scenario> [flags]
  <scenario>          a name in loadtest/scenarios (burst, steady-40rpm, ramp, quota-incident, lanes, trace) or a path
  --target URL        agent service base URL; several comma-separated replicas are spread over (default http://127.0.0.1:8080)
  --agent FILE[#export]  start a stack of your own instead (mock provider, serve for the module's root agent,
                      Prometheus), run against it (every request goes to the served app) and compare with
                      the planner as --plan does; --app NAME names the served app
  --protocol P        native (POST /v1/agents/{tree}/run, default) or adk (an ADK API server: sessions, then /run or /run_sse)
  --app NAME          with --protocol adk: the app to call, as the server's GET /list-apps lists it
  --base-path PATH    with --protocol adk: prefix of the server's routes, e.g. /api for ADK Go
  --prometheus URL    remote-write k6's metrics to this Prometheus (needs --web.enable-remote-write-receiver)
  --mock-url URL      mock provider base URL, for scenarios that change its quota (default http://127.0.0.1:8090)
  --scale F           multiply every time in the scenario by F (0.1 = ten times faster; rates scale by 1/F)
  --load F            multiply users and rates by F
  --report-dir DIR    reports go to DIR/<run-id> (default reports)
  --plan              then print the planner's prediction beside the steady state the run measured
                      (needs --prometheus scraping the agent service; quota and latency are read from
                      the mock provider at --mock-url; the scenario's longest constant rate is the steady phase)
  --replicas N        agent replicas sharing the budget, for --plan (default: the number of --target URLs);
                      with --agent the serve replicas to start (default 1)
  --budget-fraction F share of the quota the agents' budget was set to, for --plan (default ${WORKED_EXAMPLE.budgetFraction})
       npm run loadtest -- convert-trace <access.jsonl> [--out trace.jsonl]`;

const DEFAULT_TARGET = 'http://127.0.0.1:8080';

const flagsSchema = z.object({
  target: z.string().optional(),
  agent: z.string().min(1).max(4096).optional(),
  prometheus: z.url({ protocol: /^https?$/ }).optional(),
  'mock-url': z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8090'),
  scale: z.coerce.number().positive().default(1),
  load: z.coerce.number().positive().default(1),
  'report-dir': z.string().default('reports'),
  out: z.string().optional(),
  replicas: z.coerce.number().int().positive().max(1000).optional(),
  'budget-fraction': z.coerce.number().positive().max(1).default(WORKED_EXAMPLE.budgetFraction),
  protocol: z.enum(['native', 'adk']).optional(),
  app: adkTargetSchema.shape.app.optional(),
  'base-path': adkTargetSchema.shape.basePath,
});

/** The compose Prometheus' scrape interval, seconds (what Grafana's datasource is told). */
const COMPOSE_SCRAPE_SECONDS = durationSeconds(defaultConfig.datasource.scrapeInterval) ?? 5;
type Flags = z.output<typeof flagsSchema>;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...Object.fromEntries(Object.keys(flagsSchema.shape).map((k) => [k, { type: 'string' as const }])),
      help: { type: 'boolean' as const },
      plan: { type: 'boolean' as const },
    },
  });
  if (values.help || positionals.length === 0) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const { help: _help, plan: wantPlan, ...rest } = values;
  const parsed = flagsSchema.safeParse(rest);
  if (!parsed.success) throw new Error(`--${String(parsed.error.issues[0].path[0])}: ${parsed.error.issues[0].message}`);
  const flags = parsed.data;

  if (positionals[0] === 'convert-trace') {
    if (!positionals[1]) throw new Error('convert-trace needs the access log file');
    const jsonl = toJsonLines(convertAccessLog(readFileSync(positionals[1], 'utf8'), positionals[1]));
    if (flags.out) writeFileSync(flags.out, jsonl);
    else process.stdout.write(jsonl);
    return 0;
  }

  if (flags.agent !== undefined && (flags.target !== undefined || flags.prometheus !== undefined)) {
    throw new AgentTargetError('--agent starts its own stack: leave out --target and --prometheus');
  }
  // --agent: the module loads and its tree walks before anything starts.
  const agent = flags.agent === undefined ? undefined : await resolveAgentTarget({ agent: flags.agent, tree: flags.app });
  // With --agent, --app names the served app (the scenario is sent to it below).
  const app = agent?.kind === 'serve' ? (flags.protocol === 'adk' ? agent.app : undefined) : flags.app;
  const protocol = { protocol: flags.protocol, app, basePath: flags['base-path'] };
  const loaded = withProtocol(scaleScenario(loadScenario(positionals[0]), { time: flags.scale, load: flags.load }), protocol);
  const scenario = agent ? scenarioForTarget(agent, loaded) : loaded;
  const givenTargets = (flags.target ?? DEFAULT_TARGET).split(',').map((t) => t.trim().replace(/\/$/, ''));
  // --plan: fail before the run when the comparison could not be made after it.
  let mock: MockParameters | undefined;
  if (!agent) {
    await checkTargetsServe(givenTargets, scenario);
    if (wantPlan) {
      if (!flags.prometheus) throw new Error('--plan needs --prometheus (the Prometheus that scrapes the agent service)');
      mock = await fetchMockParameters(flags['mock-url']);
    }
  }
  const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${scenario.name}`;
  const reportDir = resolve(flags['report-dir'], runId);
  const aborter = new AbortController();
  process.once('SIGINT', () => aborter.abort());
  process.once('SIGTERM', () => aborter.abort());
  let stack: LocalStack | undefined;
  const group = new ProcessGroup(reportDir);
  try {
    if (agent) {
      mkdirSync(reportDir, { recursive: true });
      const say = (line: string) => console.log(`[loadtest] ${line}`);
      const prometheusDir = join(reportDir, 'prometheus');
      stack = await startLocalStack(group, { target: agent, limits: { replicas: flags.replicas ?? 1 }, prometheusDir, scrapeIntervalSeconds: LOCAL_STACK_SCRAPE_SECONDS, say });
      // The stack is the run's own, so plan vs measured can always be made.
      mock = await fetchMockParameters(stack.mockUrl);
    }
    return await runScenario(flags, positionals[0], wantPlan === true, scenario, runId, reportDir, aborter.signal, {
      targets: stack?.agentUrls ?? givenTargets,
      prometheusUrl: stack?.prometheusUrl ?? flags.prometheus,
      scrapeSeconds: stack ? LOCAL_STACK_SCRAPE_SECONDS : COMPOSE_SCRAPE_SECONDS,
      mockUrl: stack?.mockUrl ?? flags['mock-url'],
      mock,
      counted: agent?.kind === 'serve' ? { app: agent.app, calls: agent.modelCallsPerRequest } : undefined,
    });
  } catch (e) {
    if (e instanceof ToolMissingError || aborter.signal.aborted) throw e;
    console.error(`loadtest: failed: ${(e as Error).message}`);
    return 1;
  } finally {
    await group.stopAll();
  }
}

interface RunTargets {
  targets: string[];
  prometheusUrl: string | undefined;
  /** The scrape interval of that Prometheus, seconds. */
  scrapeSeconds: number;
  mockUrl: string;
  /** The mock's quota and latency, for --plan. */
  mock: MockParameters | undefined;
  /** The served app's model calls per request, counted from its tree (--agent). */
  counted?: { app: string; calls: number | undefined };
}

async function runScenario(
  flags: Flags,
  scenarioArg: string,
  wantPlan: boolean,
  scenario: ScenarioFile,
  runId: string,
  reportDir: string,
  signal: AbortSignal,
  t: RunTargets,
): Promise<number> {
  const { targets, prometheusUrl, mock } = t;
  console.log(`[loadtest] ${scenario.name} against ${targets.join(',')}${prometheusUrl ? `, remote write to ${prometheusUrl}` : ''}; report in ${reportDir}`);
  const probe = mock ? new GaugeProbe({ urls: targets.map((u) => `${u}/metrics`), metric: limiterMetrics.permitsInUse.name, meanIntervalMs: 200 }) : undefined;
  probe?.start();
  const progress = new RunProgress({ scenario, prometheusUrl });
  await progress.start();
  const result = await runK6({
    scenario,
    target: targets.join(','),
    reportDir,
    runId,
    prometheusUrl,
    mockUrl: t.mockUrl,
    onLine: (l) => progress.log(`[k6] ${l}`),
    onProgress: (p) => progress.update(p),
    signal,
  }).finally(async () => {
    await probe?.stop();
    await progress.stop();
  });
  let comparison: Awaited<ReturnType<typeof compareRun>> | undefined;
  // One more scrape of the agent after the last request.
  if (prometheusUrl && !signal.aborted) await new Promise((r) => setTimeout(r, (t.scrapeSeconds + 1) * 1000));
  if (mock && prometheusUrl && !signal.aborted) {
    comparison = await compareRun({
      scenario,
      prometheusUrl,
      testStartedAt: result.testStartedAt,
      endedAt: result.endedAt,
      probe,
      agentUrl: targets[0],
      stack: { ...mock, budgetFraction: flags['budget-fraction'], replicas: flags.replicas ?? targets.length },
    });
    writeFileSync(join(reportDir, 'plan-vs-measured.json'), JSON.stringify(comparison, null, 2));
    console.log('skipped' in comparison ? `plan vs measured: skipped (${comparison.skipped})` : formatComparison(comparison));
  }
  const providerStatuses = prometheusUrl && !signal.aborted ? await providerStatusCounts(prometheusUrl, result.startedAt, Date.now()).catch(() => undefined) : undefined;
  const failure = allFailedMessage(result.summary, providerStatuses);
  if (t.counted && prometheusUrl && !signal.aborted) {
    const totals = await stackTotals(prometheusUrl, result.startedAt, Date.now());
    const counted = t.counted.calls === undefined ? '' : ` (${t.counted.calls} per request counted in ${t.counted.app})`;
    console.log(`[loadtest] ${totals.requests} requests served, ${totals.modelCalls} model calls at the provider${counted}, ${totals.providerRateLimited} 429s, ${totals.timeouts} limiter timeouts`);
  }
  if (prometheusUrl && !signal.aborted) {
    const range = { from: result.testStartedAt, to: Date.now() };
    const record: RunRecord = {
      runId,
      scenario: scenario.name,
      flags: { scenario: scenarioArg, ...flags, plan: wantPlan, description: scenario.description },
      range,
      rateInterval: rateIntervalFor(range.from, range.to, t.scrapeSeconds),
      k6ExitCode: result.exitCode,
      failure,
      k6: result.summary,
      planVsMeasured: comparison,
      probeSamples: probe?.samples,
    };
    writeRunRecord(reportDir, record);
    const { path } = await writeReport({
      prometheusUrl,
      ...range,
      reportDir,
      runId,
      rateInterval: record.rateInterval,
      probeSamples: probe?.samples,
      parameters: record.flags,
      k6: result.summary,
      planVsMeasured: comparison,
    });
    console.log(`report: ${path}`);
  } else if (!signal.aborted) {
    console.log(`[loadtest] no report: it needs --prometheus (k6's summary is in ${reportDir})`);
  }
  if (failure) {
    console.error(`loadtest: ${failure}`);
    return ALL_FAILED_EXIT_CODE;
  }
  if (result.exitCode === THRESHOLDS_FAILED) console.log('[loadtest] thresholds failed (k6 exit 99)');
  return result.exitCode;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (e) {
  const known = [ScenarioError, ToolMissingError, AgentTargetError, UnservedTreeError].some((kind) => e instanceof kind);
  console.error(`loadtest: ${(e as Error).message}`);
  if (!known) console.error(USAGE);
  process.exitCode = 2;
}
