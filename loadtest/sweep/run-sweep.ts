// `quotascope sweep`: measured capacity beside the plan. Starts start's stack once (mock
// provider, agent service or serve for --agent, Prometheus), then probes steady rates on it:
// doubling from half the plan's capacity until a step fails the knee's criteria, bisecting,
// then repeating the knee's rate (search.ts). Prints the time budget first and one line per
// step; writes sweep.json and sweep.html (with screenshots) into reports/<run-id>/; resolves
// to the exit code (1 when --require is above the measured knee, or nothing could be measured).
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { WORKED_EXAMPLE } from '../../agent/worked-example.ts';
import { MIN_REQUEST_DEADLINE_MS } from '../../instrumentation/defaults.ts';
import { requestDeadlineMsFor } from '../../instrumentation/admission/request-deadlines.ts';
import { replaceFile } from '../../shared/replace-files.ts';
import { STOPPED_EXIT_CODE } from '../../shared/stop-signals.ts';
import { mainScenario } from '../run-fit.ts';
import { withForwardRun } from '../planner/forward-plan.ts';
import { startInput } from '../start-input.ts';
import { fetchAgentShapes } from '../measure/agent-shapes.ts';
import { plannedCapacity } from '../measure/plan-vs-measured.ts';
import { criticalPathSeconds, type StackParameters, treeTiming } from '../measure/steady-state.ts';
import { runIdFor } from '../run-id.ts';
import { runShutdown } from '../run-shutdown.ts';
import { withTree } from '../scenario/trees.ts';
import { resolveRunTarget } from '../stack/agent-target.ts';
import { scenarioForTarget } from '../stack/target-scenario.ts';
import { LOCAL_STACK_SCRAPE_SECONDS, startLocalStack } from '../stack/local-stack.ts';
import { ProcessGroup } from '../stack/processes.ts';
import type { StartOptions } from '../start-options.ts';
import { type PlanGap, type PlanQuantities, planGap } from './plan-gap.ts';
import { nextStep, type SearchOptions } from './search.ts';
import { runStep, type StepContext, type StepResult, stepTiming } from './step.ts';
import { writeSweepReport } from './sweep-report.ts';
import { type SweepFindings, sweepFindings } from './sweep-result.ts';
import {
  DEFAULT_SLO_P95_SECONDS,
  MAX_LOST_PERCENT,
  SLO_CRITICAL_PATHS,
  MAX_MULTIPLE_OF_PLAN,
  PLAN_TOLERANCE,
  START_RATE_WITHOUT_PLAN,
  START_SHARE_OF_PLAN,
  SWEEP_RESOLUTION,
  type SweepOptions,
  timeScaleOf,
} from './sweep-options.ts';

/** Time to start the stack, s (measured ~15 s on 2 busy cores). */
const STACK_START_SECONDS = 25;
/** Never probe above this, per minute (the schema's bound on a rate). */
const RATE_CEILING = 100_000;

/** What sweep.json holds (the CI's input). */
export interface SweepRecord {
  runId: string;
  tree: string;
  parameters: Record<string, unknown>;
  criteria: { maxLostPercent: number; maxPartialPercent: number; sloP95Seconds: number };
  timing: { warmUpSeconds: number; windowSeconds: number };
  plan?: { perMinute: number; binding: string; quantities: PlanQuantities };
  steps: StepResult[];
  findings: SweepFindings;
  /** The knee beside the plan; absent without a plan or a knee. */
  gap?: PlanGap;
  measured?: PlanQuantities;
  /** --require and whether the knee met it. */
  require?: { perMinute: number; met: boolean; line: string };
  wallSeconds: number;
}

const say = (line: string) => console.log(`[sweep] ${line}`);
const rate = (x: number) => `${x.toFixed(1)}/min`;
const seconds = (x: number | undefined) => (x === undefined ? '-' : `${x.toFixed(1)} s`);

/** One line for a measured step. */
export function stepLine(s: StepResult): string {
  return (
    `offered ${rate(s.perMinute)}: served ${rate(s.servedPerMinute)}, shed ${rate(s.shedPerMinute)}, partial ${s.partialPercent.toFixed(1)} %, ` +
    `not served ${s.lostPercent.toFixed(1)} %, p95 ${seconds(s.servedP95Seconds)}, provider 429s ${s.provider429s}, door wait p95 ${seconds(s.doorWaitP95Seconds)} ` +
    `(${s.started} requests in the window) → ${s.check.ok ? 'pass' : `fail: ${s.check.why.join(', ')}`}`
  );
}

/** The measured counterparts of the plan's inputs over the knee's steps. */
function measuredQuantities(steps: readonly StepResult[]): PlanQuantities {
  const sum = (f: (s: StepResult) => number) => steps.reduce((a, s) => a + f(s), 0);
  const okCalls = sum((s) => s.okCalls);
  const times = steps.map((s) => s.callSeconds).filter((x): x is number => x !== undefined && Number.isFinite(x));
  const completed = sum((s) => s.completedRequests);
  return {
    tokensPerCall: okCalls > 0 ? sum((s) => s.countedTokens) / okCalls : undefined,
    callSeconds: times.length ? times.reduce((a, b) => a + b, 0) / times.length : undefined,
    callsPerRequest: completed > 0 ? okCalls / completed : undefined,
  };
}

export async function runSweep(o: SweepOptions): Promise<number> {
  const began = Date.now();
  const { target, tree, shape } = await resolveRunTarget({ agent: o.agent, tree: o.tree, calibrate: { messageTokens: o.tokens, outputTokensPerCall: WORKED_EXAMPLE.outputTokensPerCall } });
  const criticalPath = shape ? criticalPathSeconds(shape, o.callSeconds) : 4 * o.callSeconds;
  // The door's deadline and the SLO as the unscaled tree would have them, scaled like the call time.
  const scale = timeScaleOf(o.callSeconds);
  const deadlineMs = o.requestDeadlineMs ?? Math.max(MIN_REQUEST_DEADLINE_MS, Math.round(requestDeadlineMsFor((criticalPath * 1000) / scale) * scale));
  // A deep tree's requests take longer than the scaled SLO alone: it leaves half its critical path again for the door.
  const sloP95 = o.sloP95 ?? Number(Math.max(DEFAULT_SLO_P95_SECONDS * scale, SLO_CRITICAL_PATHS * criticalPath).toFixed(2));
  const flags: StartOptions = { ...o, scenario: undefined, duration: o.windowSeconds, rate: 1, burstUsers: 0, ...(o.admission === 'request' ? { requestDeadlineMs: deadlineMs } : {}) };
  const timing = stepTiming(criticalPath, o.callSeconds, o.admission === 'request' ? deadlineMs / 1000 : 0, o.windowSeconds);
  const treeTimes = treeTiming(criticalPath, flags);
  const scenarioFor = (perMinute: number, duration: number, name: string) => {
    const s = mainScenario({ ...flags, rate: perMinute, duration }, tree, treeTimes);
    return scenarioForTarget(target, withTree({ ...s, name }, tree));
  };
  // The plan's served rate is what the door serves of the tree (the forward run), where it has one.
  const input = await withForwardRun(startInput(flags, target, scenarioFor(1, o.windowSeconds, 'sweep')), o.tokens, say);
  if (input.stack.kind !== 'local') throw new Error('sweep runs on its own stack');
  const stackOptions = input.stack.options;
  const steps = o.maxSteps + o.repeats;
  say(
    `time budget: up to ${steps} steps of ~${timing.wallSeconds} s (${timing.warmUpSeconds} s warm-up left out, ${timing.windowSeconds} s measured, the drain and a scrape) ` +
      `+ ~${STACK_START_SECONDS} s to start the stack: at most ~${Math.ceil((steps * timing.wallSeconds + STACK_START_SECONDS) / 60)} min; ${tree} at ${o.callSeconds} s per call (critical path ${criticalPath.toFixed(1)} s, request deadline ${deadlineMs / 1000} s, p95 SLO ${sloP95} s)`,
  );

  const runId = runIdFor('sweep');
  const dir = resolve(o.reportDir, runId);
  mkdirSync(dir, { recursive: true });
  const group = new ProcessGroup(dir);
  const shutdown = runShutdown(group, (line) => say(line));
  const run = async (): Promise<number> => {
    const up = await startLocalStack(group, { ...stackOptions, prometheusDir: join(dir, 'prometheus'), scrapeIntervalSeconds: LOCAL_STACK_SCRAPE_SECONDS, say });
    const stack = (typeof input.plan === 'function' ? await input.plan(up.mockUrl) : input.plan) as StackParameters;
    const shapes = await fetchAgentShapes(up.agentUrls[0] as string).catch(() => ({}) as Record<string, null>);
    const agentShape = shapes[tree];
    const phase = { arrival: { kind: 'constant' as const, start: 0, perMinute: 1, duration: o.windowSeconds }, tree, inputTokensPerCall: o.tokens };
    const planned = agentShape ? plannedCapacity(agentShape, phase, stack) : undefined;
    if (planned) say(`plan: the budget sustains ${rate(planned.perMinute)} (binding: ${planned.binding})`);
    else say(`plan: none (${tree} has no fixed shape the planner can count); the search starts at ${START_RATE_WITHOUT_PLAN}/min`);
    const search: SearchOptions = {
      startPerMinute: o.startRate ?? (planned ? planned.perMinute * START_SHARE_OF_PLAN : START_RATE_WITHOUT_PLAN),
      maxPerMinute: Math.min(RATE_CEILING, planned ? planned.perMinute * MAX_MULTIPLE_OF_PLAN : 1000),
      minPerMinute: 0.5,
      resolution: SWEEP_RESOLUTION,
      maxSearchSteps: o.maxSteps,
      repeats: o.repeats,
      maxLostShare: MAX_LOST_PERCENT / 100,
    };
    const criteria = { maxLostPercent: MAX_LOST_PERCENT, maxPartialPercent: o.maxPartial, sloP95Seconds: sloP95 };
    const context: StepContext = {
      targets: up.agentUrls,
      mockUrl: up.mockUrl,
      prometheusUrl: up.prometheusUrl,
      scrapeSeconds: LOCAL_STACK_SCRAPE_SECONDS,
      dir,
      runId,
      timing,
      criteria,
      scenarioFor,
      ...(planned?.limiter ? { limiter: planned.limiter } : {}),
      signal: shutdown.signal,
      onLine: (line) => {
        if (/level=(error|warning)/.test(line)) say(`[k6] ${line}`);
      },
    };
    const results: StepResult[] = [];
    let decision = nextStep([], search);
    while (decision.kind === 'probe') {
      const elapsed = Math.round((Date.now() - began) / 1000);
      say(`step ${results.length + 1} of at most ${steps} (${decision.phase}) at ${rate(decision.perMinute)}, ${elapsed} s in…`);
      const step = await runStep(context, results.length + 1, decision.perMinute, decision.phase);
      if (shutdown.signal.aborted) return STOPPED_EXIT_CODE;
      results.push(step);
      say(`  ${stepLine(step)}`);
      decision = nextStep(
        results.map((s) => ({ perMinute: s.perMinute, ok: s.check.ok, servedPerMinute: s.servedPerMinute, lostTooMany: s.check.lostTooMany, repeat: s.phase === 'repeat' })),
        search,
      );
    }
    const findings = sweepFindings(results, decision);
    const kneeSteps = findings.knee ? results.filter((s) => s.perMinute === findings.knee?.perMinute) : [];
    const measured = kneeSteps.length ? measuredQuantities(kneeSteps) : undefined;
    const quantities: PlanQuantities | undefined = planned && {
      tokensPerCall: planned.plan.demand.tokensPerCall,
      callSeconds: planned.plan.input.latencySeconds,
      callsPerRequest: planned.plan.tree.callsPerRequest,
    };
    const gap = planned && findings.knee && quantities && measured ? planGap(planned.perMinute, findings.knee.servedPerMinute, findings.knee.plusMinus, quantities, measured, PLAN_TOLERANCE) : undefined;
    const knee = findings.knee;
    const required = o.require;
    const require =
      required === undefined
        ? undefined
        : (() => {
            const at = knee?.servedPerMinute ?? 0;
            const met = knee !== undefined && at >= required;
            const line = met
              ? `sweep: the measured knee ${rate(at)} meets --require ${rate(required)}`
              : `sweep: the measured knee ${rate(at)} is ${rate(required - at)} (${((1 - at / required) * 100).toFixed(1)} %) below --require ${rate(required)}`;
            return { perMinute: required, met, line };
          })();
    const record: SweepRecord = {
      runId,
      tree,
      parameters: { ...o, sloP95, ...(o.admission === 'request' ? { requestDeadlineMs: deadlineMs } : {}) },
      criteria,
      timing: { warmUpSeconds: timing.warmUpSeconds, windowSeconds: timing.windowSeconds },
      ...(planned && quantities ? { plan: { perMinute: planned.perMinute, binding: planned.binding, quantities } } : {}),
      steps: results,
      findings,
      ...(gap ? { gap } : {}),
      ...(measured ? { measured } : {}),
      ...(require ? { require } : {}),
      wallSeconds: Math.round((Date.now() - began) / 1000),
    };
    replaceFile(join(dir, 'sweep.json'), JSON.stringify(record, null, 2));
    console.log('');
    console.log(
      knee
        ? `knee: ${rate(knee.perMinute)} offered, ${rate(knee.servedPerMinute)} ± ${knee.plusMinus.toFixed(1)} served (${knee.passed} of ${knee.steps} steps at it passed); ` +
            `${findings.bracket.high === undefined ? 'no rate failed' : `no rate from ${rate(findings.bracket.high)} up can pass`}; ${findings.reason}`
        : `knee: none (${findings.reason})`,
    );
    console.log(`saturated: ${findings.saturatedPerMinute === undefined ? 'no step shed more than allowed' : `${rate(findings.saturatedPerMinute)} served at most while shedding`}`);
    if (gap) console.log(`${gap.line}${gap.why ? `: ${gap.why}` : ''}`);
    const page = await writeSweepReport(dir, record).catch((e: Error) => {
      say(`no report page: ${e.message}`);
      return undefined;
    });
    console.log(`sweep record: ${join(dir, 'sweep.json')}`);
    if (page) console.log(`report: ${page.html}${page.screenshot ? ` (screenshot ${page.screenshot})` : ''}`);
    console.log(`took ${Math.round((Date.now() - began) / 1000)} s`);
    if (require && !require.met) {
      console.error(require.line);
      return 1;
    }
    if (require) console.log(require.line);
    return knee || results.some((s) => s.served > 0) ? 0 : 1;
  };
  return shutdown.runToEnd(run, STOPPED_EXIT_CODE);
}
