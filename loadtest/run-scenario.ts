// `quotascope loadtest <scenario>`: one scenario with k6 against a running stack (or an ADK
// API server); with --plan the planner's prediction beside the steady state it measured;
// with a Prometheus, the run record and the report page. With an agent module (--agent) it
// starts its own stack (mock provider, serve for the module, Prometheus) and runs against
// that. A run whose requests all failed exits 1. The flags are cli/loadtest.ts's.
import { defaultConfig, durationSeconds } from '../dashboards/config.ts';
import { redactUrlsIn } from '../instrumentation/redact-url.ts';
import { THRESHOLDS_FAILED } from './drive/runner.ts';
import { formatComparison } from './measure/comparison-text.ts';
import { type RunInput, type RunResult, runPipeline } from './run-pipeline.ts';
import type { ScenarioFile } from './scenario/types.ts';
import type { AgentTarget } from './stack/agent-target.ts';
import { fetchMockParameters, type MockParameters } from './stack/mock-parameters.ts';
import { checkTargetsServe } from './stack/served-trees.ts';

/** The compose Prometheus' scrape interval, seconds (what Grafana's datasource is told). */
const COMPOSE_SCRAPE_SECONDS = durationSeconds(defaultConfig.datasource.scrapeInterval) ?? 5;
/** The agent service base URL when no --target is given. */
export const DEFAULT_TARGET = 'http://127.0.0.1:8080';

export interface ScenarioRunOptions {
  /** Agent service base URLs, comma-separated (default DEFAULT_TARGET); not with agent. */
  readonly target?: string;
  /** A resolved agent module (resolveAgentTarget): the run starts its own stack serving it (target and prometheus are then left out). */
  readonly agent?: AgentTarget;
  readonly prometheus?: string;
  readonly mockUrl: string;
  readonly reportDir: string;
  /** Agent replicas sharing the budget, for the plan (default: the number of targets); with agent the serve replicas to start (default 1). */
  readonly replicas?: number;
  readonly budgetFraction: number;
  /** Compare with the planner (needs prometheus). */
  readonly plan: boolean;
  /** What the run was asked for, kept in the run record. */
  readonly parameters: Record<string, unknown>;
}

/** Thrown before anything runs when the options cannot work together. */
export class ScenarioRunError extends Error {
  override name = 'ScenarioRunError';
}

/** The lines `loadtest` prints after a run: the verdict first, then the figures behind it, then the report. */
function printResult(r: RunResult): void {
  if (r.verdict) console.log(r.verdict.line);
  if (r.comparison) console.log('skipped' in r.comparison ? `plan vs measured: skipped (${r.comparison.skipped})` : formatComparison(r.comparison));
  if (r.totals) {
    const { totals, agent } = r;
    if (totals.alertsActiveAtEnd.length > 0) console.log(`[loadtest] alerts pending or firing at the end: ${totals.alertsActiveAtEnd.join(', ')}`);
    const counted = agent?.modelCallsPerRequest == null ? '' : ` (${agent.modelCallsPerRequest} per request counted in ${agent.app})`;
    console.log(`[loadtest] ${totals.requests} requests served, ${totals.modelCalls} model calls at the provider${counted}, ${totals.providerRateLimited} 429s, ${totals.timeouts} limiter timeouts`);
  }
  if (r.reportPath) console.log(`report: ${r.reportPath}`);
  else console.log(`[loadtest] no report: it needs --prometheus (k6's summary is in ${r.reportDir})`);
  if (r.problem) console.error(`loadtest: ${r.problem.message}`);
  else if (r.exitCode === THRESHOLDS_FAILED) console.log('[loadtest] thresholds failed (k6 exit 99)');
}

const say = (line: string) => console.log(`[loadtest] ${line}`);

/**
 * Runs the (loaded, scaled) scenario; resolves to k6's exit code, or 1 when every request
 * failed. Against given targets it first checks they serve the scenario's trees or app
 * (UnservedTreeError); with an agent it starts and stops its own stack.
 */
export async function runScenario(scenario: ScenarioFile, o: ScenarioRunOptions): Promise<number> {
  const agent = o.agent?.kind === 'serve' ? o.agent : undefined;
  const givenTargets = (o.target ?? DEFAULT_TARGET).split(',').map((t) => t.trim().replace(/\/$/, ''));
  // --plan: fail before the run when the comparison could not be made after it.
  let mock: MockParameters | undefined;
  if (!agent) {
    if (o.plan) {
      if (!o.prometheus) throw new ScenarioRunError('--plan needs --prometheus (the Prometheus that scrapes the agent service)');
      mock = await fetchMockParameters(o.mockUrl);
    }
    await checkTargetsServe(givenTargets, scenario);
  }
  // With an agent the stack is the run's own, so plan vs measured can always be made.
  const plan = agent !== undefined || o.plan;
  const stackOf = (m: MockParameters, replicas: number) => ({ ...m, budgetFraction: o.budgetFraction, replicas });
  const input: RunInput = {
    scenario,
    reportRoot: o.reportDir,
    parameters: { ...o.parameters, plan, description: scenario.description },
    ...(agent
      ? {
          stack: { kind: 'local', options: { target: agent, limits: { replicas: o.replicas ?? 1 } } },
          plan: async (mockUrl: string) => stackOf(await fetchMockParameters(mockUrl), o.replicas ?? 1),
        }
      : {
          stack: { kind: 'running', targets: givenTargets, prometheusUrl: o.prometheus, scrapeSeconds: COMPOSE_SCRAPE_SECONDS, mockUrl: o.mockUrl },
          plan: mock && stackOf(mock, o.replicas ?? givenTargets.length),
        }),
  };
  const result = await runPipeline(input, {
    say,
    out: process.stdout,
    ready: ({ targets, prometheusUrl, reportDir }) =>
      console.log(redactUrlsIn(`[loadtest] ${scenario.name} against ${targets.join(',')}${prometheusUrl ? `, remote write to ${prometheusUrl}` : ''}; report in ${reportDir}`)),
  });
  if (!result.aborted) printResult(result);
  return result.exitCode;
}
