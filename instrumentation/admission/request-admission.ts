// Request admission: serve a whole user request or shed it whole, before it spends anything.
//
// A request is one user invocation of an ADK tree, with everything nested in it (parallel
// branches, loops, AgentTool sub-runs). At the door it is funded on every limiter of its tree
// with the calls the tree makes (counted from the tree, tree/tree-count.ts) times each agent's
// learned tokens per call (call-cost.ts), within its deadline; then it runs in an async
// context (admitted-request.ts) where every model call draws from that reservation and waits
// for a permit in the order of its request's admission. One that cannot be funded in time is
// shed at once with RequestShed and a retry-after hint. Per-call admission misses a branch
// here and a synthesizer there under overload; this turns the excess into whole requests
// turned away, so the ones admitted finish whole and no tokens are spent on broken answers.
//
// From the first request on, a request's deadline and door know its tree: the critical path
// (every sequential call: steps, loop iterations, AgentTool turns, workflow edges) times the
// limiter's expected call time (call-cost.ts: what calls measured, else the prior it was
// given, else DEFAULT_EXPECTED_CALL_MS), and no request's deadline is shorter than that chain
// with its margin; the request's deadlines are computed once, at the door (request-deadlines.ts).
// Each call is funded at no less than its own request's message (every call
// of the tree carries it), and a call that starts larger than its share is topped up from the
// budget before it is sent (call-admission.ts).
//
// A limiter given an expected cost per call funds a cold burst whole from it and reconciles
// when the calls report. One with none has no cost to fund with: while it knows none of its
// tree's agents, one request at a time has its calls on that limiter admitted one by one (as
// `call` admission does) and teaches it; the others wait at the door until a call has taught
// a cost, or the learner's bounded turn ran out (cold-start.ts).
//
// The pipeline, per request: plan the tree (once per root) -> its deadlines -> on each limiter
// of the tree, in name order, its door (limiter-door.ts: local or shared, chosen once per
// limiter; cold -> learning -> warm) funds a share or sheds the request -> the request runs
// with its shares (admitted-request.ts, funded-share.ts) -> settled when it ends.
//
// The invariant: an admitted request ends partial only when the provider fails one of its
// calls after retries, never because the limiter ran out of time or budget for it.
import type { Event, LlmRequest, Runner, RunnableRoot } from '@google/adk';
import { z } from 'zod';
import { AdmittedRequest, currentRequest, messageTextOf, runInRequest } from './admitted-request.ts';
import { type Clock, realClock } from '../clock.ts';
import { DEFAULT_SHED_FIRST_LANES } from '../defaults.ts';
import { RequestShed } from '../errors.ts';
import { estimateInputTokens } from '../estimator.ts';
import type { FundedShare } from './funded-share.ts';
import { limiterOptionFields, optionProblems } from '../limiter-options.ts';
import { DoorQueue, type FundingDoor, LimiterDoor } from './limiter-door.ts';
import { isRateLimitedLlm, type RateLimitedLlm } from '../rate-limited-llm.ts';
import { deadlineMsFor, requestDeadlines } from './request-deadlines.ts';
import { callsByAgent, countModelCalls, DEFAULT_TOOL_TURNS, TreeCountError } from '../tree/tree-count.ts';
import { llmAgentsOf, walkAgentTree } from '../tree/tree-walk.ts';

export interface RequestAdmissionOptions {
  /**
   * A request's deadline from its arrival, ms (1 s to 600 s). Unset: DEFAULT_REQUEST_DEADLINE_MS,
   * or twice the tree's critical path at the learned call time when that is longer (capped at
   * 600 s), so a deep tree is not shed for a deadline it could never meet.
   */
  readonly requestDeadlineMs?: number;
  /** Rounds of tool calls an LlmAgent with tools is counted to make (default DEFAULT_TOOL_TURNS). */
  readonly toolTurns?: number;
  /** Lanes whose requests never wait at the door and are shed while others wait (default DEFAULT_SHED_FIRST_LANES). */
  readonly shedFirstLanes?: readonly string[];
  readonly clock?: Clock;
  /** Where a once-per-tree warning goes (a configured deadline lengthened to the tree's chain); default console.warn. */
  readonly log?: (line: string) => void;
}

export interface RequestRunOptions {
  /** The request's traffic class (a lane in shedFirstLanes is shed first). */
  readonly lane?: string;
  /** Aborts the wait at the door (the client went away). */
  readonly signal?: AbortSignal;
  /** When the request arrived, on the admission's clock (default: now). */
  readonly arrivedAt?: number;
  /**
   * The request's own message (runAsync takes newMessage): every call of the tree carries it,
   * so none is funded at less than its counted input tokens.
   */
  readonly message?: Content;
}

/** One limiter of a tree and the model calls a request makes on it, per agent. */
interface TreeLimiter {
  readonly llm: RateLimitedLlm;
  /** Undefined when the tree's calls cannot be counted (its calls are admitted one by one). */
  readonly calls: ReadonlyMap<string, number> | undefined;
}

/** What admission needs of a tree, read once per root. */
interface TreePlan {
  /** Sorted by limiter name (the funding order when no door has a wait). */
  readonly limiters: readonly TreeLimiter[];
  /** Calls on the critical path (0 when the tree cannot be counted). */
  readonly depth: number;
  /** The tree's root agent's name, in warnings. */
  readonly name: string;
}

/** A user message, as ADK carries it (the limiter package depends on ADK alone). */
type Content = LlmRequest['contents'][number];

/** Counted input tokens of a message, by the provider's counting rule. */
function messageTokensOf(message: Content | undefined): number | undefined {
  return message === undefined ? undefined : estimateInputTokens({ contents: [message] });
}

// The numbers a user sets: the request deadline is the limiter option of that name (one
// definition, shared with the services and flags); objects are checked by use.
const optionsSchema = z.looseObject({
  requestDeadlineMs: limiterOptionFields.shape.requestDeadlineMs,
  toolTurns: z.int().min(0).max(100).optional(),
});

export class RequestAdmission {
  /** The configured deadline; undefined: the default, lengthened for deep trees. */
  readonly requestDeadlineMs: number | undefined;
  readonly toolTurns: number;
  readonly shedFirstLanes: ReadonlySet<string>;
  readonly #clock: Clock;
  readonly #log: (line: string) => void;
  /** Trees whose configured deadline was found shorter than their chain (warned once). */
  readonly #lengthened = new WeakSet<TreePlan>();
  readonly #plans = new WeakMap<object, TreePlan>();
  /** Per limiter with a budget: its door, of a kind chosen once (limiter-door.ts). */
  readonly #doors = new WeakMap<RateLimitedLlm, LimiterDoor>();
  /** What an admitted request that learns a cost ends when it ends. */
  readonly #learners = new WeakMap<AdmittedRequest, (() => void)[]>();
  /** Requests of lanes not shed first that wait at the door now. */
  readonly #queue = new DoorQueue();

  constructor(options: RequestAdmissionOptions = {}) {
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new RangeError(`RequestAdmission options: ${optionProblems(parsed.error)}`);
    }
    this.requestDeadlineMs = parsed.data.requestDeadlineMs;
    this.toolTurns = parsed.data.toolTurns ?? DEFAULT_TOOL_TURNS;
    this.shedFirstLanes = new Set(options.shedFirstLanes ?? DEFAULT_SHED_FIRST_LANES);
    this.#clock = options.clock ?? realClock;
    this.#log = options.log ?? console.warn;
  }

  /** Requests waiting at the door to be funded right now. */
  get waiting(): number {
    return this.#queue.waiting;
  }

  /**
   * Admit one request of `root`, run `fn` as that request, and settle it when `fn` ends.
   * Throws RequestShed, before `fn` runs, when the request cannot be funded in time. Inside
   * a request already (an AgentTool's sub-run), `fn` runs as part of that request.
   */
  async run<T>(root: RunnableRoot, fn: () => Promise<T>, options: RequestRunOptions = {}): Promise<T> {
    if (currentRequest()) return fn();
    const plan = this.#planFor(root);
    const request = await this.#admit(plan, options);
    let ok = false;
    try {
      const result = await runInRequest(request, fn);
      ok = true;
      return result;
    } finally {
      this.#end(plan, request, ok);
    }
  }

  /**
   * `runner.runAsync(params)` as one admitted request: for a user's own Runner. Throws
   * RequestShed on the first pull when the request cannot be funded in time.
   */
  async *runAsync(runner: Runner, params: Parameters<Runner['runAsync']>[0], options: RequestRunOptions = {}): AsyncGenerator<Event, void, undefined> {
    if (currentRequest()) {
      yield* runner.runAsync(params);
      return;
    }
    const plan = this.#planFor(runner.agent);
    const request = await this.#admit(plan, { signal: params.abortSignal, message: params.newMessage, ...options });
    const events = runInRequest(request, () => runner.runAsync(params));
    let ok = false;
    try {
      for (;;) {
        // Every step runs in the request's context: the branches it starts inherit it.
        const next = await runInRequest(request, () => events.next());
        if (next.done) break;
        yield next.value;
      }
      ok = true;
    } finally {
      if (!ok) await runInRequest(request, () => events.return(undefined)).catch(() => {});
      this.#end(plan, request, ok);
    }
  }

  #planFor(root: RunnableRoot): TreePlan {
    let plan = this.#plans.get(root);
    if (!plan) {
      plan = planTree(root, this.toolTurns);
      this.#plans.set(root, plan);
    }
    return plan;
  }

  /**
   * The deadline of a request whose critical path is `depth` calls of `callMs` each: the
   * configured one (else the default, lengthened for deep trees), and never shorter than the
   * chain with its door margin, which a request needs to finish at all (request-deadlines.ts).
   */
  deadlineFor(depth: number, callMs: number): number {
    return deadlineMsFor(depth, callMs, this.requestDeadlineMs);
  }

  /**
   * The time a request of `root` takes at the least at the expected call time: its critical
   * path in calls times the slowest of its limiters' expected call time. A service refuses to
   * start with a configured deadline shorter than this.
   */
  chainMs(root: RunnableRoot): number {
    const plan = this.#planFor(root);
    return Math.ceil(plan.depth * expectedCallMsOf(plan));
  }

  async #admit(plan: TreePlan, options: RequestRunOptions): Promise<AdmittedRequest> {
    const clock = this.#clock;
    const arrivedAt = options.arrivedAt ?? clock.now();
    const callMs = expectedCallMsOf(plan);
    // A lane shed first never waits at the door; the others wait while the deadline leaves time for the tree.
    const shedFirst = options.lane !== undefined && this.shedFirstLanes.has(options.lane);
    const deadlines = requestDeadlines({
      arrivedAt,
      now: clock.now(),
      depth: plan.depth,
      callMs,
      seenPathMs: seenPathMsOf(plan, callMs),
      configuredMs: this.requestDeadlineMs,
      shedFirst,
    });
    const deadlineMs = deadlines.requestMs;
    if (this.requestDeadlineMs !== undefined && deadlineMs > this.requestDeadlineMs && !this.#lengthened.has(plan)) {
      this.#lengthened.add(plan);
      this.#log(
        `request admission: "${plan.name}": the request deadline of ${this.requestDeadlineMs} ms is shorter than its chain of ${plan.depth} calls at ${Math.round(callMs)} ms each; its requests get ${deadlineMs} ms`,
      );
    }
    for (const { llm } of plan.limiters) llm.metrics.requestDeadline.set({ limiter: llm.name }, deadlineMs / 1000);
    const shares = new Map<object, FundedShare>();
    const taken: FundedShare[] = [];
    const messageTokens = messageTokensOf(options.message);
    const door: FundingDoor = { deadlines, shedFirst, signal: options.signal, learning: [], messageTokens };
    const leaveDoor = plan.limiters.map(({ llm }) => llm.doorWaiters.enter(arrivedAt));
    try {
      for (const limiter of this.#fundingOrder(plan, messageTokens)) {
        const share = await this.#fund(limiter, door);
        if (!share) continue;
        shares.set(limiter.llm, share);
        taken.push(share);
      }
    } catch (error) {
      // Nothing of a shed request was used: every share taken goes back whole.
      for (const share of taken) share.settle();
      for (const done of door.learning) done();
      if (error instanceof RequestShed) this.#count(plan, 'shed', arrivedAt);
      else if (options.signal?.aborted) this.#count(plan, 'abandoned', arrivedAt); // the client left while waiting at the door
      throw error;
    } finally {
      for (const leave of leaveDoor) leave();
    }
    this.#count(plan, 'admitted', arrivedAt);
    const messageText = options.message ? messageTextOf(options.message) : undefined;
    const request = new AdmittedRequest(arrivedAt, clock.now(), deadlines.request, options.lane, shares, messageTokens ?? 0, messageText);
    if (door.learning.length > 0) this.#learners.set(request, door.learning);
    return request;
  }

  /**
   * The tree's limiters, the one a request would wait at longest first (ties in name order):
   * a share taken holds its window room from its admission on, so a share taken before a wait
   * at another door would keep that room idle for the wait.
   */
  #fundingOrder(plan: TreePlan, messageTokens: number | undefined): TreeLimiter[] {
    const waitOf = ({ llm, calls }: TreeLimiter) => (calls ? (this.#doorOf(llm)?.expectedWaitMs(calls, messageTokens) ?? 0) : 0);
    const waits = new Map(plan.limiters.map((limiter) => [limiter, waitOf(limiter)]));
    return [...plan.limiters].sort((a, b) => (waits.get(b) as number) - (waits.get(a) as number));
  }

  /** Reserve a request's tokens on one limiter through its door, or shed it; undefined when the limiter admits its calls one by one. */
  #fund({ llm, calls }: TreeLimiter, door: FundingDoor): Promise<FundedShare | undefined> | undefined {
    const limiterDoor = this.#doorOf(llm);
    if (!limiterDoor || !calls) return undefined;
    return limiterDoor.fund(calls, door);
  }

  /** The limiter's door, made on first use; undefined for a limiter without a budget. */
  #doorOf(llm: RateLimitedLlm): LimiterDoor | undefined {
    const budget = llm.budget;
    if (!budget) return undefined;
    let limiterDoor = this.#doors.get(llm);
    if (!limiterDoor) {
      limiterDoor = new LimiterDoor(llm, budget, this.#clock, this.#queue);
      this.#doors.set(llm, limiterDoor);
    }
    return limiterDoor;
  }

  #count(plan: TreePlan, outcome: 'admitted' | 'shed' | 'abandoned', arrivedAt: number): void {
    const waited = Math.max(0, this.#clock.now() - arrivedAt) / 1000;
    for (const { llm } of plan.limiters) {
      llm.metrics.requests.inc({ limiter: llm.name, outcome });
      llm.metrics.requestAdmission.observe({ limiter: llm.name, outcome }, waited);
    }
  }

  /** The request is over: settle its shares, count it completed or partial, and count a partial one's tokens as wasted. */
  #end(plan: TreePlan, request: AdmittedRequest, ok: boolean): void {
    request.settle();
    for (const done of this.#learners.get(request) ?? []) done();
    this.#learners.delete(request);
    const whole = ok && request.wholeOk;
    for (const { llm } of plan.limiters) {
      llm.metrics.requests.inc({ limiter: llm.name, outcome: whole ? 'completed' : 'partial' });
      const spent = request.tokensByLimiter.get(llm.name) ?? 0;
      if (!whole && spent > 0) llm.metrics.wastedTokens.inc({ limiter: llm.name }, spent);
    }
  }
}

/** The call time a request of `plan` is planned with: the slowest of its limiters' expected call time. */
function expectedCallMsOf(plan: TreePlan): number {
  return Math.max(0, ...plan.limiters.map(({ llm }) => llm.callCost.expectedCallMs));
}

/** The tree's path as its calls were seen: the latest of each agent's mean start after admission, plus a call, ms (0 before any). */
function seenPathMsOf(plan: TreePlan, callMs: number): number {
  let seen = 0;
  for (const { llm, calls } of plan.limiters) {
    for (const agent of calls?.keys() ?? []) seen = Math.max(seen, (llm.callCost.meanStartOffsetMs(agent) ?? 0) + callMs);
  }
  return seen;
}

/** The tree's rate-limited models and the calls a request makes on each. */
function planTree(root: RunnableRoot, toolTurns: number): TreePlan {
  const tree = walkAgentTree(root);
  const agentsByLimiter = new Map<RateLimitedLlm, string[]>();
  for (const agent of llmAgentsOf(tree)) {
    const model = modelOf(agent);
    if (!isRateLimitedLlm(model)) continue;
    agentsByLimiter.set(model, [...(agentsByLimiter.get(model) ?? []), agent.name]);
  }
  let counted: ReturnType<typeof countModelCalls> | undefined;
  try {
    counted = countModelCalls(tree, { toolTurns });
  } catch (error) {
    if (!(error instanceof TreeCountError)) throw error;
  }
  const byAgent = counted ? callsByAgent(counted) : undefined;
  const limiters = [...agentsByLimiter]
    .map(([llm, agents]) => ({
      llm,
      calls: byAgent ? new Map(agents.map((agent) => [agent, byAgent.get(agent) ?? 0] as const)) : undefined,
    }))
    .sort((a, b) => (a.llm.name < b.llm.name ? -1 : a.llm.name > b.llm.name ? 1 : 0));
  return { limiters, depth: counted?.depth ?? 0, name: tree.name };
}

/** The model an LlmAgent runs with (its own, else its nearest ancestor's); undefined when it cannot be resolved. */
function modelOf(agent: { canonicalModel: unknown }): unknown {
  try {
    return agent.canonicalModel;
  } catch {
    return undefined;
  }
}
