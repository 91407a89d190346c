// One sweep step on the running stack: k6 offers a constant rate (constant-arrival-rate) for
// a warm-up and a measuring window; the figures come from the requests that started inside
// the window (k6's per-request samples, its JSON output) and from Prometheus' increases over
// the same window (provider 429s, the door's wait, the limiter's calls, tokens and call time).
import { join } from 'node:path';
import { mock } from '../../dashboards/config.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import { runK6 } from '../drive/runner.ts';
import { queryScalar } from '../measure/prometheus-client.ts';
import type { ScenarioFile } from '../scenario/types.ts';
import { type KneeCheck, type KneeCriteria, kneeCheck } from './knee-criteria.ts';
import type { SearchPhase } from './search.ts';
import { type RequestFigures, requestFigures, STEP_SYSTEM_TAGS, stepRequests } from './step-requests.ts';
import { readFileSync } from 'node:fs';

/** How long a step runs, s: a warm-up left out, then the measuring window. */
export interface StepTiming {
  readonly warmUpSeconds: number;
  readonly windowSeconds: number;
  /** Expected wall time of a whole step, s: k6's start, the arrivals, the last requests' drain and a scrape. */
  readonly wallSeconds: number;
}

/** k6's start and the scrape after a step, s (measured ~2 s and the 2 s scrape interval). */
const STEP_OVERHEAD_SECONDS = 5;

/**
 * A step's timing for a tree whose critical path is `criticalPath` s and whose requests wait
 * at the door up to `deadlineSeconds`: the warm-up holds a request's deadline and its critical
 * path (above the knee the door's queue has grown to its steady length: a request that
 * arrived at the step's start is served or shed by then) and at least two requests' lives,
 * at least 10 s; the window is `windowSeconds` (a provider window by default).
 */
export function stepTiming(criticalPath: number, callSeconds: number, deadlineSeconds: number, windowSeconds: number): StepTiming {
  const warmUpSeconds = Math.ceil(Math.max(10, deadlineSeconds + criticalPath + callSeconds, 2 * criticalPath + callSeconds));
  return { warmUpSeconds, windowSeconds, wallSeconds: warmUpSeconds + windowSeconds + Math.ceil(criticalPath) + STEP_OVERHEAD_SECONDS };
}

/** What Prometheus saw over a step's window (every limiter, or the binding one's where named). */
export interface StackFigures {
  provider429s: number;
  /** p95 of the admitted requests' wait at the door, s. */
  doorWaitP95Seconds: number | undefined;
  /** The limiter's successful calls, their counted tokens, mean call time and completed requests. */
  okCalls: number;
  countedTokens: number;
  callSeconds: number | undefined;
  completedRequests: number;
}

export interface StepResult extends RequestFigures, StackFigures {
  readonly index: number;
  readonly phase: SearchPhase;
  /** The offered rate, user requests per minute. */
  readonly perMinute: number;
  /** The measuring window, epoch ms. */
  readonly window: { readonly from: number; readonly to: number };
  readonly check: KneeCheck;
  /** Time 0 of the step's arrivals and k6's exit, epoch ms. */
  readonly testStartedAt: number;
  readonly endedAt: number;
  /** k6's exit code (99: a threshold failed, which a sweep does not judge by). */
  readonly k6ExitCode: number;
}

export interface StepContext {
  readonly targets: readonly string[];
  readonly mockUrl: string;
  readonly prometheusUrl: string;
  readonly scrapeSeconds: number;
  /** The sweep's folder: each step writes into step-<n>/. */
  readonly dir: string;
  readonly runId: string;
  readonly timing: StepTiming;
  readonly criteria: KneeCriteria;
  /** The scenario of a step: a constant rate for `seconds`. */
  scenarioFor(perMinute: number, seconds: number, name: string): ScenarioFile;
  /** The binding limiter of a tree of several models (its calls and tokens are the plan's). */
  readonly limiter?: string;
  readonly signal?: AbortSignal;
  readonly onLine?: (line: string) => void;
}

/** Prometheus' figures over [from, to] (epoch ms). */
export async function stackFigures(prometheusUrl: string, from: number, to: number, limiter?: string): Promise<StackFigures> {
  const w = `[${Math.max(1, Math.round((to - from) / 1000))}s]`;
  const l = limiter === undefined ? '' : `limiter=${JSON.stringify(limiter)}`;
  const sel = (extra = '') => `{${[l, extra].filter(Boolean).join(',')}}`;
  const q = async (expr: string) => queryScalar(prometheusUrl, expr, to);
  const d = limiterMetrics.callDuration.name;
  const admission = limiterMetrics.requestAdmission.name;
  const doorWait = await q(`histogram_quantile(0.95, sum by (le) (increase(${admission}_bucket{outcome="admitted"}${w})))`);
  return {
    provider429s: Math.round((await q(`sum(increase(${mock.requests}{status="429"}${w}))`)) ?? 0),
    doorWaitP95Seconds: doorWait !== undefined && Number.isFinite(doorWait) ? doorWait : undefined,
    okCalls: (await q(`sum(increase(${limiterMetrics.calls.name}${sel('outcome="ok"')}${w}))`)) ?? 0,
    countedTokens: (await q(`sum(increase(${limiterMetrics.tokensActual.name}${sel()}${w}))`)) ?? 0,
    callSeconds: await q(`sum(increase(${d}_sum${sel()}${w})) / sum(increase(${d}_count${sel()}${w}))`),
    completedRequests: (await q(`sum(increase(${limiterMetrics.requests.name}${sel('outcome="completed"')}${w}))`)) ?? 0,
  };
}

/** Runs step `index` at `perMinute` and measures it. */
export async function runStep(c: StepContext, index: number, perMinute: number, phase: SearchPhase): Promise<StepResult> {
  const { warmUpSeconds, windowSeconds } = c.timing;
  const name = `step-${index}`;
  const dir = join(c.dir, name);
  const points = join(dir, 'k6-points.json');
  const k6 = await runK6({
    scenario: c.scenarioFor(perMinute, warmUpSeconds + windowSeconds, `sweep-${name}`),
    target: c.targets.join(','),
    reportDir: dir,
    runId: `${c.runId}-${name}`,
    mockUrl: c.mockUrl,
    outputs: [`json=${points}`],
    env: { K6_SYSTEM_TAGS: STEP_SYSTEM_TAGS },
    signal: c.signal,
    onLine: c.onLine,
  });
  const from = k6.testStartedAt + warmUpSeconds * 1000;
  const to = from + windowSeconds * 1000;
  const requests = requestFigures(stepRequests(readFileSync(points, 'utf8')), from, to, perMinute);
  // One more scrape after the window's last sample.
  await new Promise((r) => setTimeout(r, (c.scrapeSeconds + 1) * 1000));
  const stack = await stackFigures(c.prometheusUrl, from, to, c.limiter);
  const check = kneeCheck({ ...requests, provider429s: stack.provider429s }, c.criteria);
  return { index, phase, perMinute, ...requests, ...stack, window: { from, to }, check, testStartedAt: k6.testStartedAt, endedAt: k6.endedAt, k6ExitCode: k6.exitCode };
}
