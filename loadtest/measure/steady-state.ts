// Where a run's steady state is, and what the planner is told about it: shared by `npm start`
// and `npm run loadtest -- <scenario> --plan`.
import type { ForwardFigure } from '../planner/forward-plan.ts';
import type { PerModel } from '../../agent/per-model.ts';
import type { TreeShape } from '../../agent/tree-shapes.ts';
import { chainDeadlineMs, requestDeadlineMsFor } from '../../instrumentation/admission/request-deadlines.ts';
import type { CountedTokenKind } from '../../instrumentation/counted-tokens.ts';
import type { CallLatency } from '../planner/call-time.ts';
import { arrivalSpans } from '../scenario/arrivals.ts';
import { RUN_QUOTA_WINDOW_SECONDS } from '../start-options.ts';
import { resolveRequest } from '../scenario/request.ts';
import type { ConstantArrival, ScenarioFile } from '../scenario/types.ts';
import { type AgentShape, type AgentShapes, BUILT_IN_SHAPES, type ModelShape } from './agent-shapes.ts';

export interface SteadyPhase {
  arrival: ConstantArrival;
  tree: string;
  inputTokensPerCall: number;
}

/** The scenario's longest constant-rate arrival (the one a steady state forms in), if any. */
export function steadyPhase(s: ScenarioFile): SteadyPhase | undefined {
  const constant = s.arrivals.filter((a): a is ConstantArrival => a.kind === 'constant');
  if (constant.length === 0) return undefined;
  const arrival = constant.reduce((a, b) => (b.duration > a.duration ? b : a));
  const { tree, inputTokensPerCall } = resolveRequest(arrival, s.defaults);
  return { arrival, tree, inputTokensPerCall };
}

/**
 * Why the planner cannot be compared with this run, or undefined when it can: the steady
 * phase must call a tree with a fixed shape (`shapes`: what the agent service publishes at
 * GET /v1/agents; the built-in service's table by default), and no other arrival may overlap
 * the measuring window (its requests would count as steady-state throughput).
 */
export function whyNoComparison(
  s: ScenarioFile,
  phase: SteadyPhase | undefined,
  window: { from: number; to: number },
  shapes: AgentShapes = BUILT_IN_SHAPES,
): string | undefined {
  if (!phase) return 'the scenario has no constant-rate arrival to reach a steady state';
  if (!shapes[phase.tree]) {
    const fixed = Object.keys(shapes).filter((name) => shapes[name]);
    return `the planner needs a tree with a fixed shape (${fixed.map((n) => `the ${n} tree`).join(', ') || 'none published'}); the steady phase calls ${phase.tree}`;
  }
  for (const a of s.arrivals) {
    if (a === phase.arrival) continue;
    if (arrivalSpans(a).some(([from, to]) => from <= window.to && to >= window.from)) {
      return `another arrival (${a.kind}) overlaps the steady window ${window.from.toFixed(0)}–${window.to.toFixed(0)} s`;
    }
  }
  return undefined;
}

/**
 * The measuring window in scenario seconds: after a warm-up (a third of the phase, at least
 * 4 call times, so queues have filled and earlier arrivals such as the opening burst have
 * drained), until 1 s before the phase ends (completions after it are not steady), cut to
 * the last whole quota windows (`quotaWindowSeconds`) where one fits. A saturated door
 * admits whole requests in clusters that repeat every quota window (the window frees, a
 * window later, what it charged at once): a window of whole quota windows counts whole
 * repeats. A simulated claims_pipeline run, whose doors admit 9 requests a minute in
 * clusters a minute apart, counted the calls of 4 clusters in a window of 199 s (+10 %).
 */
export function steadyWindow(phase: SteadyPhase, callSeconds: number, quotaWindowSeconds = RUN_QUOTA_WINDOW_SECONDS): { from: number; to: number } {
  const a = phase.arrival;
  const warmUp = Math.max(a.duration / 3, 4 * callSeconds);
  const from = a.start + Math.min(warmUp, a.duration / 2);
  const to = a.start + a.duration - 1;
  const windows = Math.floor((to - from) / quotaWindowSeconds);
  return { from: windows >= 1 ? to - windows * quotaWindowSeconds : from, to };
}

/** A finished run's steady phase as a comparison reads it: the phase, its tree's shape (and its limited models) and the window in epoch ms. */
export interface SteadyFrame {
  phase: SteadyPhase;
  shape: NonNullable<AgentShapes[string]>;
  /** The tree's models that each go through a limiter of their own (limitedModels); none: the fleet is measured whole. */
  models: readonly ModelShape[];
  window: { start: number; end: number };
  /** The arrivals before the steady phase, in words (`the opening burst of 10 users`); undefined when none. */
  before: string | undefined;
}

/** The models of a tree that each go through a limiter of their own: all of them, or none when one has no limiter. */
export function limitedModels(shape: AgentShape): readonly ModelShape[] {
  const models = shape.models?.filter((m) => m.limiter !== undefined) ?? [];
  return models.length > 0 && models.length === shape.models?.length ? models : [];
}

/**
 * The steady phase of a run whose time 0 was `testStartedAt` and that ended at `endedAt`
 * (epoch ms), or why it cannot be compared: no steady phase, a tree without a fixed shape,
 * an overlapping arrival (whyNoComparison), or a window under 3 s.
 */
export function steadyFrame(s: ScenarioFile, shapes: AgentShapes, callSeconds: number, testStartedAt: number, endedAt: number): SteadyFrame | { skipped: string } {
  const phase = steadyPhase(s);
  const steady = phase ? steadyWindow(phase, callSeconds) : { from: 0, to: 0 };
  const why = whyNoComparison(s, phase, steady, shapes);
  const shape = phase && shapes[phase.tree];
  if (why || !phase || !shape) return { skipped: why ?? 'no steady phase' };
  const start = testStartedAt + steady.from * 1000;
  const end = Math.min(testStartedAt + steady.to * 1000, endedAt);
  if (end - start < 3000) return { skipped: `the steady window is too short (${((end - start) / 1000).toFixed(1)} s): lengthen the steady phase` };
  return { phase, shape, models: limitedModels(shape), window: { start, end }, before: arrivalsBefore(s, phase) };
}

/** The arrivals that start before the steady phase, in words; undefined when none. */
export function arrivalsBefore(scenario: ScenarioFile, phase: SteadyPhase): string | undefined {
  const before = scenario.arrivals.filter((a) => a !== phase.arrival && a.kind === 'burst' && a.at < phase.arrival.start);
  if (before.length === 0) return undefined;
  const users = before.reduce((n, a) => n + (a.kind === 'burst' ? a.users * (a.repeat?.times ?? 1) : 0), 0);
  return before.length === 1 ? `the opening burst of ${users} users` : `${before.length} bursts of ${users} users before it`;
}

/** Why a scenario that changes the mock mid-run is not compared. */
const MOCK_CHANGES = "the scenario changes the mock provider's settings (quota, throttling) mid-run: the plan knows only those at the start";

/**
 * A finished run's steady phase, in one read: the steady window in epoch ms (where the
 * scenario has a steady phase; the verdict counts the completions in it even where plan vs
 * measured is skipped) and the frame plan vs measured reads, or why it cannot compare: a
 * scenario that changes the mock (its `shapes` are not read: undefined), the shapes that
 * could not be read, or steadyFrame's reasons.
 */
export function steadyOfRun(
  s: ScenarioFile,
  shapes: AgentShapes | { skipped: string } | undefined,
  callSeconds: number,
  testStartedAt: number,
  endedAt: number,
): { window?: { start: number; end: number }; frame: SteadyFrame | { skipped: string } } {
  const phase = steadyPhase(s);
  const steady = phase ? steadyWindow(phase, callSeconds) : undefined;
  const window = steady ? { start: testStartedAt + steady.from * 1000, end: Math.min(testStartedAt + steady.to * 1000, endedAt) } : undefined;
  if (s.mock || shapes === undefined) return { window, frame: { skipped: MOCK_CHANGES } };
  if ('skipped' in shapes) return { window, frame: shapes as { skipped: string } };
  return { window, frame: steadyFrame(s, shapes, callSeconds, testStartedAt, endedAt) };
}

export interface StackParameters {
  outputTokensPerCall: number;
  /** Which tokens the quota and the budget count (the run's one setting). */
  countedTokens: CountedTokenKind;
  latencySeconds: number;
  /** The provider's quotas: one number for every model, or per model (a model not named takes `*`). */
  quotaRequestsPerMinute: PerModel;
  quotaTokensPerMinute: PerModel;
  /** Input tokens per call of each model, measured from one request through the tree (planned per model when given). */
  inputTokensPerModel?: Readonly<Record<string, number>>;
  /** The same per agent (what each agent's calls weigh in a request's work). */
  inputTokensPerAgent?: Readonly<Record<string, number>>;
  /** The agents that call each model (a fix for a model names them). */
  agentsPerModel?: Readonly<Record<string, readonly string[]>>;
  /** Output tokens per call of each model, measured from the same request (tool turns answer short). */
  outputTokensPerModel?: Readonly<Record<string, number>>;
  /** The provider's call shape (first token, then per output token): with outputTokensPerModel, each model's own call time. */
  callLatency?: CallLatency;
  /** Permits of each limiter per replica (what saturates when a model's budget binds). */
  permits?: number;
  /** request: a request is funded whole on every limiter or shed (every model serves the binding model's rate); call: each call alone. */
  admission?: 'request' | 'call';
  budgetFraction: number;
  replicas: number;
  maxWaitSeconds?: number;
  burstUsers?: number;
  /** The served tree's forward run through one replica's door (forward-plan.ts): what request admission serves, fleet-wide. */
  forwardRun?: ForwardFigure;
}

/**
 * The tree's critical path: its longest chain of model calls one after another (a branch's
 * calls, then the sequential steps), times the call time. No request finishes sooner.
 */
export function criticalPathSeconds(shape: TreeShape, callSeconds: number): number {
  // The counted chain where the tree was counted; the flattened shape's otherwise (its branch, then every later call).
  return (shape.depth ?? shape.callsPerBranch + shape.sequentialSteps) * callSeconds;
}

/**
 * The shortest steady phase (whole seconds) that measures whole requests of a tree whose
 * critical path is `criticalPath` seconds: its warm-up holds one request's life, so the first
 * requests have ended, and its measuring window (steadyWindow's) holds two, so requests that
 * start inside the window also end inside it.
 */
export function minimumSteadySeconds(criticalPath: number, callSeconds: number): number {
  const long = (duration: number) => {
    const arrival: ConstantArrival = { kind: 'constant', start: 0, perMinute: 1, duration };
    const w = steadyWindow({ arrival, tree: '', inputTokensPerCall: 1 }, callSeconds);
    return w.from >= criticalPath && w.to - w.from >= 2 * criticalPath;
  };
  // No phase shorter than three request lives holds one of warm-up and two measured.
  let duration = Math.max(1, Math.ceil(3 * criticalPath));
  while (!long(duration)) duration++;
  return duration;
}

/** A tree's times at the run's call time, worked out once: what fitting the run to the tree and its scenario read. */
export interface TreeTiming {
  /** Its critical path, s (criticalPathSeconds; 0 for a tree without a fixed shape). */
  readonly criticalPath: number;
  /** The shortest steady phase that measures whole requests, s (minimumSteadySeconds). */
  readonly minimumSteadySeconds: number;
  /** The request deadline under request admission: the configured one, else the one the tree's path gets, ms. */
  readonly requestDeadlineMs: number;
  /** Twice the critical path, the deadline to suggest when the configured one is too short, ms. */
  readonly chainDeadlineMs: number;
}

/** The timing of a tree whose critical path is `criticalPath` s, at `f`'s call time and configured request deadline. */
export function treeTiming(criticalPath: number, f: { callSeconds: number; requestDeadlineMs?: number }): TreeTiming {
  return {
    criticalPath,
    minimumSteadySeconds: minimumSteadySeconds(criticalPath, f.callSeconds),
    requestDeadlineMs: requestDeadlineMsFor(criticalPath * 1000, f.requestDeadlineMs),
    chainDeadlineMs: chainDeadlineMs(criticalPath, 1000),
  };
}
