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
// with its margin. Each call is funded at no less than its own request's message (every call
// of the tree carries it), and a call that starts larger than its share is topped up from the
// budget before it is sent (admission.ts).
//
// A limiter given an expected cost per call funds a cold burst whole from it and reconciles
// when the calls report. One with none has no cost to fund with: while it knows none of its
// tree's agents, one request at a time has its calls on that limiter admitted one by one (as
// `call` admission does) and teaches it; the others wait at the door until a call has taught
// a cost, or the learner's bounded turn ran out (cold-start.ts).
//
// The invariant: an admitted request ends partial only when the provider fails one of its
// calls after retries, never because the limiter ran out of time or budget for it.
import type { Event, LlmRequest, Runner, RunnableRoot } from '@google/adk';
import { AdmittedRequest, currentRequest, type FundedShare, runInRequest } from './admitted-request.ts';
import type { BudgetTicket, UsePart } from './budget.ts';
import { type Clock, realClock } from './clock.ts';
import { countsInput } from './counted-tokens.ts';
import { estimateInputTokens } from './estimator.ts';
import {
  DEFAULT_REQUEST_DEADLINE_MS,
  DEFAULT_SHED_FIRST_LANES,
  MAX_REQUEST_DEADLINE_MS,
} from './defaults.ts';
import { CentralBudgetUnavailable, DeadlineExceeded, RequestShed, type ShedReason } from './errors.ts';
import { z } from 'zod';
import { limiterOptionFields, optionProblems } from './limiter-options.ts';
import { type DoorPass, PermitDoor } from './permit-door.ts';
import { ColdStart, type ColdStartTurn } from './cold-start.ts';
import { isRateLimitedLlm, type RateLimitedLlm } from './rate-limited-llm.ts';
import { callsByAgent, countModelCalls, DEFAULT_TOOL_TURNS, TreeCountError } from './tree/tree-count.ts';
import { llmAgentsOf, walkAgentTree } from './tree/tree-walk.ts';

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

/** What funding a request on each limiter knows of its door. */
interface FundingDoor {
  readonly doorDeadline: number;
  readonly shedFirst: boolean;
  readonly arrivedAt: number;
  readonly signal: AbortSignal | undefined;
  /** The request learns a cost on these limiters: each ends its turn. */
  readonly learning: (() => void)[];
  /** Counted tokens of the request's own message: no call is funded at less. */
  readonly messageTokens: number | undefined;
  /** The request's chain with its margin, ms: the longest it learns a cold limiter's cost for the others. */
  readonly chainMs: number;
}

/** What admission needs of a tree, read once per root. */
interface TreePlan {
  /** Sorted by limiter name: every request reserves in the same order. */
  readonly limiters: readonly TreeLimiter[];
  /** Calls on the critical path (0 when the tree cannot be counted). */
  readonly depth: number;
  /** The tree's root agent's name, in warnings. */
  readonly name: string;
}

/**
 * The door waits for a request to be funded at most until its deadline less this many times
 * the expected duration of its critical path, which leaves room for call times above the mean
 * and for permit waits once admitted.
 */
const CRITICAL_PATH_MARGIN = 1.5;
/** The margin on the critical path as seen (mean starts): it already holds the waits the calls' time leaves out. */
const SEEN_PATH_MARGIN = 1.2;

/** A user message, as ADK carries it (the limiter package depends on ADK alone). */
type Content = LlmRequest['contents'][number];

/** Counted input tokens of a message, by the provider's counting rule. */
function messageTokensOf(message: Content | undefined): number | undefined {
  return message === undefined ? undefined : estimateInputTokens({ contents: [message] });
}

/** Retry-after of a request shed while the shared budget is unreachable and fails closed. */
const UNAVAILABLE_RETRY_MS = 5_000;

/** Unset deadline: at least this many times the tree's critical path. */
const AUTO_DEADLINE_PATHS = 2;

// The numbers a user sets: the request deadline is the limiter option of that name (one
// definition, shared with the services and flags); objects are checked by use.
const optionsSchema = z.looseObject({
  requestDeadlineMs: limiterOptionFields.shape.requestDeadlineMs,
  toolTurns: z.int().min(0).max(100).optional(),
});

/** A request's deadline, ms: the one configured, else DEFAULT_REQUEST_DEADLINE_MS or AUTO_DEADLINE_PATHS critical paths when longer (at most MAX_REQUEST_DEADLINE_MS). */
export function requestDeadlineMsFor(criticalPathMs: number, configuredMs?: number): number {
  if (configuredMs !== undefined) return configuredMs;
  return Math.min(MAX_REQUEST_DEADLINE_MS, Math.max(DEFAULT_REQUEST_DEADLINE_MS, Math.ceil(AUTO_DEADLINE_PATHS * criticalPathMs)));
}

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
  /** Per limiter with a shared budget: the way to it, one request at a time (see permit-door.ts). */
  readonly #doors = new WeakMap<RateLimitedLlm, PermitDoor>();
  /** Per limiter that has learned no cost yet: one request at a time learns it. */
  readonly #coldStarts = new WeakMap<RateLimitedLlm, ColdStart>();
  /** What an admitted request that learns a cost ends when it ends. */
  readonly #learners = new WeakMap<AdmittedRequest, (() => void)[]>();
  /** Requests of lanes not shed first that wait at the door now. */
  #waiting = 0;

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
    return this.#waiting;
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
   * chain with its door margin, which a request needs to finish at all.
   */
  deadlineFor(depth: number, callMs: number): number {
    const deadlineMs = requestDeadlineMsFor(depth * callMs, this.requestDeadlineMs);
    // Shorter than the chain and its margin: twice the chain, as an unset one on a deep tree.
    if (deadlineMs >= chainWithMarginMs(depth, callMs)) return deadlineMs;
    return Math.min(MAX_REQUEST_DEADLINE_MS, Math.ceil(AUTO_DEADLINE_PATHS * depth * callMs));
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
    const deadlineMs = this.deadlineFor(plan.depth, callMs);
    if (this.requestDeadlineMs !== undefined && deadlineMs > this.requestDeadlineMs && !this.#lengthened.has(plan)) {
      this.#lengthened.add(plan);
      this.#log(
        `request admission: "${plan.name}": the request deadline of ${this.requestDeadlineMs} ms is shorter than its chain of ${plan.depth} calls at ${Math.round(callMs)} ms each; its requests get ${deadlineMs} ms`,
      );
    }
    for (const { llm } of plan.limiters) llm.metrics.requestDeadline.set({ limiter: llm.name }, deadlineMs / 1000);
    const deadline = arrivedAt + deadlineMs;
    const shedFirst = options.lane !== undefined && this.shedFirstLanes.has(options.lane);
    // A lane shed first never waits at the door; the others wait while the deadline leaves time for the tree.
    const doorDeadline = shedFirst ? clock.now() : deadline - doorMarginMs(plan, callMs);
    const shares = new Map<object, FundedShare>();
    const taken: FundedShare[] = [];
    const learning: (() => void)[] = [];
    const messageTokens = messageTokensOf(options.message);
    const leaveDoor = plan.limiters.map(({ llm }) => llm.doorWaiters.enter(arrivedAt));
    try {
      for (const limiter of plan.limiters) {
        const share = await this.#fund(limiter, { doorDeadline, shedFirst, arrivedAt, signal: options.signal, learning, messageTokens, chainMs: chainWithMarginMs(plan.depth, callMs) });
        if (!share) continue;
        shares.set(limiter.llm, share);
        taken.push(share);
      }
    } catch (error) {
      for (const { budget, ticket, starting } of taken) {
        starting?.leave();
        budget.reconcile(ticket, 0);
      }
      for (const done of learning) done();
      if (error instanceof RequestShed) this.#count(plan, 'shed', arrivedAt);
      else if (options.signal?.aborted) this.#count(plan, 'abandoned', arrivedAt); // the client left while waiting at the door
      throw error;
    } finally {
      for (const leave of leaveDoor) leave();
    }
    this.#count(plan, 'admitted', arrivedAt);
    const request = new AdmittedRequest(arrivedAt, clock.now(), deadline, options.lane, shares, messageTokens ?? 0);
    if (learning.length > 0) this.#learners.set(request, learning);
    return request;
  }

  /** Reserve a request's tokens on one limiter, or shed it; undefined when the limiter admits its calls one by one. */
  async #fund(
    { llm, calls }: TreeLimiter,
    door: FundingDoor,
  ): Promise<FundedShare | undefined> {
    const budget = llm.budget;
    if (!budget || !calls) return undefined;
    const tokensPerCall = costsOf(llm, calls, door.messageTokens) ?? (await this.#coldStart(llm, calls, door));
    if (!tokensPerCall) {
      // Calls admitted one by one from a shared budget that refuses them all: shed whole instead.
      const refused = await budget.refusal?.();
      if (refused) throw new RequestShed(llm.name, 'budget_unavailable', refused.retryAfterMs ?? UNAVAILABLE_RETRY_MS);
      return undefined;
    }
    let tokens = 0;
    for (const [agent, n] of calls) tokens += n * (tokensPerCall.get(agent) ?? 0);
    tokens = Math.ceil(tokens);
    const useSchedule = scheduleOf(llm, calls, tokensPerCall);
    const now = this.#clock.now();
    const shed = (reason: ShedReason, retryAfterMs: number) => new RequestShed(llm.name, reason, retryAfterMs);
    if (tokens > budget.capacity) throw shed('too_large', budget.windowMs ?? 60_000);
    const fundableInMs = budget.fundableInMs?.(tokens, useSchedule);
    if (door.shedFirst && this.#waiting > 0) throw shed('lane', fundableInMs ?? DEFAULT_REQUEST_DEADLINE_MS);
    // A lane shed first goes only if it can be funded now; the others if in time for their door deadline.
    if (fundableInMs !== undefined && (door.shedFirst ? fundableInMs > 0 : now + fundableInMs > door.doorDeadline)) {
      throw shed(door.shedFirst ? 'lane' : 'deadline', fundableInMs);
    }
    let ticket: BudgetTicket;
    let starting: DoorPass | undefined;
    if (door.shedFirst) {
      const now = budget.tryReserve(tokens, { windowAtUse: true, useSchedule });
      if (!now) throw shed('lane', fundableInMs ?? DEFAULT_REQUEST_DEADLINE_MS);
      ticket = now;
    } else {
      this.#waiting++;
      try {
        const wait = { deadline: door.doorDeadline, signal: door.signal, priority: door.arrivedAt, windowAtUse: true, useSchedule };
        // A shared budget is asked only once this replica can start the request's first calls.
        if (budget.central !== undefined) starting = await this.#doorOf(llm).enter(firstCallsOf(llm, calls), wait);
        ticket = await budget.reserve(tokens, wait);
      } catch (error) {
        starting?.leave();
        if (error instanceof DeadlineExceeded) throw shed('deadline', budget.fundableInMs?.(tokens, useSchedule) ?? DEFAULT_REQUEST_DEADLINE_MS);
        // Nothing can be funded while the shared budget fails closed: turned away whole, like any shed request.
        if (error instanceof CentralBudgetUnavailable) throw shed('budget_unavailable', error.retryAfterMs ?? UNAVAILABLE_RETRY_MS);
        throw error;
      } finally {
        this.#waiting--;
      }
    }
    return { budget, ticket, tokensPerCall, spent: 0, drawn: 0, toppedUp: 0, starting };
  }

  /**
   * At a limiter that has learned no cost: learn on this request (undefined: its calls there
   * are admitted one by one), or wait at the door until a learner's request taught the costs.
   * A request already learning on another limiter does not wait (two learners never wait on
   * each other); it learns here too when nobody does.
   */
  async #coldStart(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>, door: FundingDoor): Promise<Map<string, number> | undefined> {
    let cold = this.#coldStarts.get(llm);
    if (!cold) {
      cold = new ColdStart(this.#clock, () => llm.callCost.known);
      this.#coldStarts.set(llm, cold);
    }
    if (door.learning.length > 0) {
      const done = cold.tryLearn(door.chainMs);
      if (done) door.learning.push(done);
      return undefined;
    }
    // A lane shed first never waits at the door: while another request learns, its calls are admitted one by one too.
    if (door.shedFirst && cold.learning) return undefined;
    let turn: ColdStartTurn;
    this.#waiting++;
    try {
      turn = await cold.enter({ deadline: door.shedFirst ? undefined : door.doorDeadline, signal: door.signal, priority: door.arrivedAt, turnMs: door.chainMs });
    } catch (error) {
      // Shed while another request learns: it may ask again when that learner's turn ends at the latest.
      if (error instanceof DeadlineExceeded) throw new RequestShed(llm.name, 'deadline', Math.max(1, cold.turnLeftMs()));
      throw error;
    } finally {
      this.#waiting--;
    }
    if (turn.kind === 'learn') {
      door.learning.push(turn.done);
      return undefined;
    }
    return costsOf(llm, calls, door.messageTokens);
  }

  #doorOf(llm: RateLimitedLlm): PermitDoor {
    let door = this.#doors.get(llm);
    if (!door) {
      door = new PermitDoor(llm.semaphore, this.#clock);
      this.#doors.set(llm, door);
    }
    return door;
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

/** A chain of `depth` calls of `callMs` each, with the door's margin: the least a request needs to finish. */
function chainWithMarginMs(depth: number, callMs: number): number {
  return CRITICAL_PATH_MARGIN * depth * callMs;
}

/**
 * Funded tokens per call of each agent (call-cost.ts: learned beyond the request's message,
 * plus this request's where the limiter counts input); undefined while the limiter knows none.
 * A limiter that counts input tokens alone funds each agent's mean: every call's cost is its
 * own prompt, known when it starts, and is drawn from the request's whole share (admission.ts),
 * so a request is funded at what it uses on average, as the plan counts it. Counting output
 * too, a call's cost is known only once it reported: the most recent calls used. Agents not
 * seen yet share what the prior's total leaves (call-cost.ts fundRequest).
 */
function costsOf(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>, messageTokens: number | undefined): Map<string, number> | undefined {
  if (!llm.callCost.known) return undefined;
  const message = messageTokens !== undefined && countsInput(llm.countedTokens) ? messageTokens : 0;
  return llm.callCost.fundRequest(calls, message, llm.countedTokens === 'input' ? 'mean' : 'most');
}

/**
 * What a request must have left of its deadline when it is admitted, to end whole: its depth
 * in calls with a margin, or, when longer, what its calls were seen to take (each agent's mean
 * start after admission, plus a call) with a smaller one. The second counts what the calls'
 * time leaves out (the tree's own steps, waits for a permit): with short calls those alone
 * outlast the first margin.
 */
function doorMarginMs(plan: TreePlan, callMs: number): number {
  let seen = 0;
  for (const { llm, calls } of plan.limiters) {
    for (const agent of calls?.keys() ?? []) seen = Math.max(seen, (llm.callCost.meanStartOffsetMs(agent) ?? 0) + callMs);
  }
  return Math.max(CRITICAL_PATH_MARGIN * plan.depth * callMs, SEEN_PATH_MARGIN * seen);
}

/** Calls a request starts at once on one limiter: its agents' whose calls start before a call could end (unknown: at once). */
function firstCallsOf(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>): number {
  const halfCallMs = (llm.callCost.meanCallMs ?? 0) / 2;
  let first = 0;
  for (const [agent, n] of calls) if ((llm.callCost.startOffsetMs(agent) ?? 0) <= halfCallMs) first += n;
  return first;
}

/**
 * When a request's tokens on one limiter are used: each agent's nth call from an early
 * start learned for the nth call of that agent (a loop's second iteration, a tool caller's
 * turn after its tool start later than the first; at admission while unknown), so the later
 * calls' share is held against the window only from then. Held from the agent's first call
 * on, a later call's tokens kept window room idle until it started (research_pipeline: its
 * critics' second turns and its writer's second iteration).
 */
function scheduleOf(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>, tokensPerCall: ReadonlyMap<string, number>): UsePart[] {
  const byOffset = new Map<number, number>();
  for (const [agent, n] of calls) {
    for (let nth = 0; nth < n; nth++) {
      const afterMs = llm.callCost.startOffsetMs(agent, nth) ?? 0;
      byOffset.set(afterMs, (byOffset.get(afterMs) ?? 0) + (tokensPerCall.get(agent) ?? 0));
    }
  }
  return [...byOffset].map(([afterMs, tokens]) => ({ afterMs, tokens }));
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
