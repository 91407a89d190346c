// The one run pipeline behind `start` (with or without --agent) and `loadtest`: the stack
// (started here, or running services), the permits probe, k6 (or the Node driver), one more
// scrape, plan vs measured, the totals, the run record and the report, and the exit code.
// It prints nothing: what it has to say goes to the caller's RunReporter, and what it found
// comes back as a RunResult the caller prints. Signals and the stop of what it started are
// run-shutdown.ts's; the run id is run-id.ts's.
import { makeDirectory } from '../shared/make-directory.ts';
import { join, resolve } from 'node:path';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { runNodeDriver } from './drive/node-driver.ts';
import { RunProgress } from './drive/progress.ts';
import { runK6 } from './drive/runner.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import type { StackParameters } from './measure/steady-state.ts';
import { runIdFor } from './run-id.ts';
import { collectRun, type Driven } from './run-collect.ts';
import { type Measured, measureRun } from './run-measure.ts';
import { type Recorded, recordRun, type RunAgent } from './run-report.ts';
import { STOPPED_EXIT_CODE } from '../shared/stop-signals.ts';
import { runShutdown } from './run-shutdown.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { LOCAL_STACK_SCRAPE_SECONDS, type LocalStackOptions, startLocalStack } from './stack/local-stack.ts';
import { ProcessGroup } from './stack/processes.ts';
import { findTool } from './stack/tools.ts';

/** Where the run's traffic goes: a stack the run starts on loopback and stops, or services already running. */
export type RunStack =
  | { readonly kind: 'local'; readonly options: Omit<LocalStackOptions, 'say' | 'prometheusDir' | 'scrapeIntervalSeconds'> }
  | {
      readonly kind: 'running';
      readonly targets: readonly string[];
      readonly prometheusUrl?: string;
      /** The scrape interval of that Prometheus, seconds. */
      readonly scrapeSeconds: number;
      readonly mockUrl: string;
    };

export interface RunInput {
  readonly scenario: ScenarioFile;
  /** The run's folder is <reportRoot>/<run id>. */
  readonly reportRoot: string;
  readonly stack: RunStack;
  /** The stack's parameters for plan vs measured (a function: read from the started stack's mock); none, no comparison and no probe. */
  readonly plan?: StackParameters | ((mockUrl: string) => Promise<StackParameters>);
  /** What the run was asked for, kept in the run record. */
  readonly parameters: Record<string, unknown>;
  /** Where k6 is missing, replay the scenario with the Node driver (else runK6 names the missing tool). */
  readonly nodeDriverWithoutK6?: boolean;
}

/** Where the pipeline's words go. */
export interface RunReporter {
  /** A stage of the run, one line (the stack coming up, a fallback). */
  say(line: string): void;
  /** The live progress line, k6's lines and the driver's (a stream, so a terminal's line can be redrawn). */
  readonly out: NodeJS.WriteStream;
  /** The run has its id and folder; nothing has started yet. */
  begin?(run: { runId: string; reportDir: string }): void;
  /** The targets are up; the traffic starts next. */
  ready?(run: { targets: readonly string[]; prometheusUrl: string | undefined; reportDir: string }): void;
}

/** What a run found; `aborted` runs (a signal) carry their id and folder only. */
export interface RunResult extends Partial<Measured>, Partial<Recorded> {
  readonly runId: string;
  readonly reportDir: string;
  readonly aborted: boolean;
  /** 130 when stopped by a signal, 1 when every request failed or nothing was measured, else the driver's (k6: 99 for a failed threshold). */
  readonly exitCode: number;
  /** The driver's own exit code. */
  readonly driverExitCode?: number;
  /** The served module (a local stack serving a user's module). */
  readonly agent?: RunAgent;
}

/** A stack the run can send traffic to. */
interface Targets {
  targets: readonly string[];
  prometheusUrl: string | undefined;
  scrapeSeconds: number;
  mockUrl: string;
  /** The run started it (its metrics must be there; its totals are the run's). */
  own: boolean;
}

/** The served module's record, for a local stack serving a user's module. */
function agentOf(stack: RunStack): RunAgent | undefined {
  const target = stack.kind === 'local' ? stack.options.target : undefined;
  if (target?.kind !== 'serve') return undefined;
  return { app: target.app, module: target.spec, modelCallsPerRequest: target.modelCallsPerRequest ?? null, countNote: target.countNote };
}

async function upStack(stack: RunStack, group: ProcessGroup, reportDir: string, reporter: RunReporter): Promise<Targets> {
  if (stack.kind === 'running') return { targets: stack.targets, prometheusUrl: stack.prometheusUrl, scrapeSeconds: stack.scrapeSeconds, mockUrl: stack.mockUrl, own: false };
  const up = await startLocalStack(group, { ...stack.options, prometheusDir: join(reportDir, 'prometheus'), scrapeIntervalSeconds: LOCAL_STACK_SCRAPE_SECONDS, say: reporter.say });
  return { targets: up.agentUrls, prometheusUrl: up.prometheusUrl, scrapeSeconds: LOCAL_STACK_SCRAPE_SECONDS, mockUrl: up.mockUrl, own: true };
}

/** The traffic: k6 (or the Node driver), with the permits probe running beside it when a plan is compared. */
async function drive(input: RunInput, t: Targets, run: { runId: string; reportDir: string }, plan: boolean, reporter: RunReporter, signal: AbortSignal): Promise<Driven> {
  const { scenario } = input;
  // Permits in use sampled at random times (the periodic scrape can alias with k6's arrivals).
  const probe = plan ? new GaugeProbe({ urls: t.targets.map((u) => `${u}/metrics`), metric: limiterMetrics.permitsInUse.name, meanIntervalMs: 200 }) : undefined;
  probe?.start();
  try {
    if (input.nodeDriverWithoutK6 && !findTool('k6')) {
      reporter.say('k6 is not installed (install it with: npm run tools); replaying the scenario with the Node driver');
      const startedAt = Date.now();
      const summary = await runNodeDriver(scenario, t.targets[0], (l) => reporter.out.write(`[driver] ${l}\n`), signal);
      return { exitCode: 0, summary, startedAt, testStartedAt: startedAt, endedAt: Date.now(), probe };
    }
    const progress = new RunProgress({ scenario, prometheusUrl: t.prometheusUrl, out: reporter.out });
    await progress.start();
    const k6 = await runK6({
      scenario,
      target: t.targets.join(','),
      ...run,
      prometheusUrl: t.prometheusUrl,
      mockUrl: t.mockUrl,
      onLine: (l) => progress.log(`[k6] ${l}`),
      onProgress: (p) => progress.update(p),
      signal,
    }).finally(() => progress.stop());
    return { ...k6, probe };
  } finally {
    await probe?.stop();
  }
}

/** The run from the stack to the report; resolves when it is over and the processes it started are stopped. */
export async function runPipeline(input: RunInput, reporter: RunReporter): Promise<RunResult> {
  const runId = runIdFor(input.scenario.name);
  const reportDir = resolve(input.reportRoot, runId);
  makeDirectory(reportDir);
  const group = new ProcessGroup(reportDir);
  // The signal line first ends the progress line it may interrupt.
  const shutdown = runShutdown(group, (line) => {
    reporter.out.write('\n');
    reporter.say(line);
  });
  const agent = agentOf(input.stack);
  const stopped: RunResult = { runId, reportDir, aborted: true, exitCode: STOPPED_EXIT_CODE, agent };
  const run = async (): Promise<RunResult> => {
    reporter.begin?.({ runId, reportDir });
    const t = await upStack(input.stack, group, reportDir, reporter);
    if (shutdown.signal.aborted) return stopped;
    const plan = typeof input.plan === 'function' ? await input.plan(t.mockUrl) : input.plan;
    reporter.ready?.({ targets: t.targets, prometheusUrl: t.prometheusUrl, reportDir });
    const driven = await drive(input, t, { runId, reportDir }, plan !== undefined, reporter, shutdown.signal);
    if (shutdown.signal.aborted) return stopped;
    const measure = { scenario: input.scenario, ...t, plan };
    const figures = await collectRun(measure, driven);
    const measured = measureRun(measure, driven, figures);
    const processes = t.own ? group.children.map(({ name, child }) => ({ name, pid: child.pid })) : undefined;
    const recorded = t.prometheusUrl && figures.report
      ? recordRun({ runId, reportDir, scenario: input.scenario, prometheusUrl: t.prometheusUrl, parameters: input.parameters, agent, processes }, driven, measured, figures.report)
      : {};
    const exitCode = measured.problem?.exitCode ?? driven.exitCode;
    return { runId, reportDir, aborted: false, exitCode, driverExitCode: driven.exitCode, agent, ...measured, ...recorded };
  };
  return shutdown.runToEnd(run, stopped);
}
