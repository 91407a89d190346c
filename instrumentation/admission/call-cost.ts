// What one model call of each agent costs on one limiter, learned from the calls it
// finished: counted tokens per call per agent beyond its request's own message (the tree's
// agents carry the user's message in their history, so a request funds each of their calls at
// what the agent's recent calls used beyond theirs, plus its own message; an AgentTool's agent
// runs on the tool's input instead, and is funded at what its calls used), and the call time. Request
// admission funds a whole request with it (calls per agent x tokens per call) and knows from
// the call time how long a request's critical path takes. Memory is bounded: a fixed window of recent calls per
// agent, and agents are the tree's (a few names).
// Before a limiter has finished a call it knows nothing, so it starts from a prior: a call
// time (expectedCallMs: a calibration's, else DEFAULT_EXPECTED_CALL_MS) and, when declared,
// counted tokens per call (one number, or per agent from a calibration). A request that meets
// a cold limiter with a prior is funded whole from it and reconciled when its calls report;
// what calls measured replaces the prior agent by agent.
// It also learns when each agent's calls start after their request is admitted (an early one
// of its recent calls, apart for its first, second, ... call in a request), so a request's
// later calls are held against the window only from then.

import { DEFAULT_EXPECTED_CALL_MS } from '../defaults.ts';

/** Calls remembered per agent. */
const WINDOW = 50;
/** The quantile of an agent's recent start offsets its calls' tokens are held from. */
const START_OFFSET_QUANTILE = 0.2;
/** Weight of the newest call in the mean call time. */
const CALL_TIME_WEIGHT = 0.1;

/**
 * What a call is funded at: the most the agent's recent calls used ('most': a call's cost is
 * known only once it reported, as with output tokens counted), or their mean ('mean': each call
 * is charged its own prompt when it starts, drawn from its request's share, so a request funded
 * at the mean is right on average and a larger one takes the rest before it is sent).
 */
export type FundingBasis = 'most' | 'mean';

/** What a limiter assumes before it has measured a call. */
export interface CallCostPrior {
  /** A call's time, ms (default DEFAULT_EXPECTED_CALL_MS). */
  readonly callMs?: number;
  /** Counted tokens per call: one number for every agent, or per agent name (others: their mean). */
  readonly tokensPerCall?: number | Readonly<Record<string, number>>;
}

/** What is known of a finished call beyond its tokens and time. */
export interface SeenCall {
  /** Counted tokens of its request's own message (0 or unset when unknown): learned apart. */
  readonly messageTokens?: number;
  /** Whether its prompt carried its request's message; unset outside a request. */
  readonly carriesMessage?: boolean;
}

export class CallCostModel {
  readonly #prior: CallCostPrior;
  readonly #tokens = new Map<string, number[]>();
  /** Whether the agent's last call carried its request's message (an AgentTool's agent gets the tool's input instead). */
  readonly #carriesMessage = new Map<string, boolean>();
  readonly #offsets = new Map<string, number[]>();
  /** Start offsets by the agent's call in its request (first, second, ...). */
  readonly #nthOffsets = new Map<string, number[]>();
  #meanCallMs: number | undefined;
  #observedCalls = 0;

  constructor(prior: CallCostPrior = {}) {
    this.#prior = prior;
  }

  /**
   * Note a finished call of `agent`: its counted tokens and how long the provider call took;
   * `seen` tells what else is known of it.
   */
  observe(agent: string, countedTokens: number, callMs: number, seen: SeenCall = {}): void {
    this.#observedCalls++;
    const messageTokens = seen.carriesMessage === false ? 0 : (seen.messageTokens ?? 0);
    const beyond = Math.max(0, countedTokens - messageTokens);
    remember(this.#tokens, agent, beyond);
    if (seen.carriesMessage !== undefined) this.#carriesMessage.set(agent, seen.carriesMessage);
    if (Number.isFinite(callMs) && callMs >= 0) {
      this.#meanCallMs = this.#meanCallMs === undefined ? callMs : this.#meanCallMs + CALL_TIME_WEIGHT * (callMs - this.#meanCallMs);
    }
  }

  /**
   * Note when a call of `agent` started (was admitted), ms after its request was admitted;
   * `nth`: which of the request's calls of that agent it is (0: its first), learned apart.
   */
  observeStart(agent: string, afterAdmissionMs: number, nth = 0): void {
    remember(this.#offsets, agent, afterAdmissionMs);
    remember(this.#nthOffsets, nthKey(agent, nth), afterAdmissionMs);
  }

  /**
   * An early start (the START_OFFSET_QUANTILE quantile) of the agent's recent calls after
   * their request's admission, ms; undefined before its first. With `nth`: of the request's nth call of the agent (a loop's
   * later iteration, a tool caller's turn after its tool), when one was seen, else of any.
   */
  startOffsetMs(agent: string, nth?: number): number | undefined {
    const samples = (nth !== undefined ? this.#nthOffsets.get(nthKey(agent, nth)) : undefined) ?? this.#offsets.get(agent);
    if (!samples || samples.length === 0) return undefined;
    // A low quantile, not the least: one early outlier among 50 held every request's tokens
    // idle against the window from then; a call that starts before its part is due waits for
    // room only while the window is full.
    const sorted = [...samples].sort((a, b) => a - b);
    return sorted[Math.floor(START_OFFSET_QUANTILE * (sorted.length - 1))];
  }

  /** The mean start of the agent's recent calls after their request's admission, ms; undefined before its first. */
  meanStartOffsetMs(agent: string): number | undefined {
    const samples = this.#offsets.get(agent);
    return samples && samples.length > 0 ? meanOf(samples) : undefined;
  }

  /**
   * Counted tokens to fund one call of the agent with in a request whose message counts
   * `messageTokens`: the most the agent's recent calls used beyond their request's message
   * (`basis` 'mean': their mean), plus this one's where its calls carry it; an agent not seen yet takes the mean of
   * those seen (plus the message);
   * before any call, the prior (at least the message). Undefined when nothing is known.
   */
  fundPerCall(agent: string, messageTokens = 0, basis: FundingBasis = 'most'): number | undefined {
    const samples = this.#tokens.get(agent);
    if (samples && samples.length > 0) return (basis === 'mean' ? meanOf(samples) : Math.max(...samples)) + this.#messageOf(agent, messageTokens);
    const seen = this.#learnedMean();
    if (seen !== undefined) return seen + messageTokens;
    const prior = this.#priorFor(agent);
    return prior === undefined ? undefined : Math.max(prior, messageTokens);
  }

  /** The message tokens an agent's call carries: none where its calls were seen without it. */
  #messageOf(agent: string, messageTokens: number): number {
    return this.#carriesMessage.get(agent) === false ? 0 : messageTokens;
  }

  /**
   * Counted tokens per call to fund each agent of a request with (`calls`: calls per agent),
   * as fundPerCall; undefined when nothing is known. An agent not seen yet takes the mean of
   * those seen, but a tree's later agents (a writer that reads every branch) often use far
   * more than its first ones: with a prior, the request is funded at no less than the
   * prior's total, the agents not seen yet sharing what the seen ones leave of it.
   */
  fundRequest(calls: ReadonlyMap<string, number>, messageTokens = 0, basis: FundingBasis = 'most'): Map<string, number> | undefined {
    const costs = new Map<string, number>();
    for (const agent of calls.keys()) {
      const cost = this.fundPerCall(agent, messageTokens, basis);
      if (cost === undefined) return undefined;
      costs.set(agent, cost);
    }
    const unseen = [...calls].filter(([agent, n]) => n > 0 && !(this.#tokens.get(agent)?.length ?? 0));
    if (unseen.length === 0 || this.#prior.tokensPerCall === undefined) return costs;
    let short = 0;
    for (const [agent, n] of calls) short += n * (Math.max(this.#priorFor(agent) ?? 0, messageTokens) - (costs.get(agent) ?? 0));
    if (short <= 0) return costs;
    const unseenCalls = unseen.reduce((sum, [, n]) => sum + n, 0);
    for (const [agent] of unseen) costs.set(agent, (costs.get(agent) ?? 0) + short / unseenCalls);
    return costs;
  }

  /** Whether a call's cost can be told: learned from a call, or given as a prior. */
  get known(): boolean {
    return this.#learnedMean() !== undefined || this.#priorFor(undefined) !== undefined;
  }

  /** Mean of every agent's recent calls beyond their message; undefined before the first call. */
  #learnedMean(): number | undefined {
    let sum = 0;
    let n = 0;
    for (const samples of this.#tokens.values()) {
      for (const t of samples) sum += t;
      n += samples.length;
    }
    return n === 0 ? undefined : sum / n;
  }

  /** The prior's tokens per call for the agent (its own, else the prior's mean); undefined without one. */
  #priorFor(agent: string | undefined): number | undefined {
    const prior = this.#prior.tokensPerCall;
    if (prior === undefined || typeof prior === 'number') return prior;
    if (agent !== undefined && Object.hasOwn(prior, agent)) return prior[agent];
    const values = Object.values(prior);
    return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length;
  }

  /** Finished calls noted so far (observe). */
  get observedCalls(): number {
    return this.#observedCalls;
  }

  /** Mean provider call time, ms (weighted to recent calls); undefined before the first call. */
  get meanCallMs(): number | undefined {
    return this.#meanCallMs;
  }

  /** The call time to plan a request with, ms: what calls measured, else the prior's, else DEFAULT_EXPECTED_CALL_MS. */
  get expectedCallMs(): number {
    return this.#meanCallMs ?? this.#prior.callMs ?? DEFAULT_EXPECTED_CALL_MS;
  }
}

/** The key of an agent's nth call in a request (agent names are ADK identifiers: no NUL). */
function nthKey(agent: string, nth: number): string {
  return `${agent}\u0000${nth}`;
}

function meanOf(samples: readonly number[]): number {
  return samples.reduce((sum, t) => sum + t, 0) / samples.length;
}

/** Keep a finite sample >= 0 among the agent's last WINDOW. */
function remember(byAgent: Map<string, number[]>, agent: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) return;
  let samples = byAgent.get(agent);
  if (!samples) {
    samples = [];
    byAgent.set(agent, samples);
  }
  samples.push(value);
  if (samples.length > WINDOW) samples.shift();
}
