// What one model call of each agent costs on one limiter, learned from the calls it
// finished: counted tokens per call per agent, and the call time. Request admission funds a
// whole request with it (calls per agent x tokens per call) and knows from the call time how
// long a request's critical path takes. Memory is bounded: a fixed window of recent calls per
// agent, and agents are the tree's (a few names).
// Before a limiter has finished a call it knows nothing, so it starts from a prior: a call
// time (expectedCallMs: a calibration's, else DEFAULT_EXPECTED_CALL_MS) and, when declared,
// counted tokens per call (one number, or per agent from a calibration). A request that meets
// a cold limiter with a prior is funded whole from it and reconciled when its calls report;
// what calls measured replaces the prior agent by agent.
// It also learns when each agent's calls start after their request is admitted (the earliest
// of its recent calls), so a request's later calls are held against the window only from then.

import { DEFAULT_EXPECTED_CALL_MS } from './defaults.ts';

/** Calls remembered per agent. */
const WINDOW = 50;
/** Weight of the newest call in the mean call time. */
const CALL_TIME_WEIGHT = 0.1;

/** What a limiter assumes before it has measured a call. */
export interface CallCostPrior {
  /** A call's time, ms (default DEFAULT_EXPECTED_CALL_MS). */
  readonly callMs?: number;
  /** Counted tokens per call: one number for every agent, or per agent name (others: their mean). */
  readonly tokensPerCall?: number | Readonly<Record<string, number>>;
}

export class CallCostModel {
  readonly #prior: CallCostPrior;
  readonly #tokens = new Map<string, number[]>();
  readonly #offsets = new Map<string, number[]>();
  #meanCallMs: number | undefined;
  readonly #onObserved = new Set<() => void>();

  constructor(prior: CallCostPrior = {}) {
    this.#prior = prior;
  }

  /** Note a finished call: its counted tokens and how long the provider call took. */
  observe(agent: string, countedTokens: number, callMs: number): void {
    remember(this.#tokens, agent, countedTokens);
    if (Number.isFinite(callMs) && callMs >= 0) {
      this.#meanCallMs = this.#meanCallMs === undefined ? callMs : this.#meanCallMs + CALL_TIME_WEIGHT * (callMs - this.#meanCallMs);
    }
    for (const listener of this.#onObserved) listener();
  }

  /** Call `listener` after each finished call is noted (a cost may be known from then on); returns the unsubscribe. */
  onObserved(listener: () => void): () => void {
    this.#onObserved.add(listener);
    return () => this.#onObserved.delete(listener);
  }

  /** Note when a call of `agent` started (was admitted), ms after its request was admitted. */
  observeStart(agent: string, afterAdmissionMs: number): void {
    remember(this.#offsets, agent, afterAdmissionMs);
  }

  /** The earliest start of the agent's recent calls after their request's admission, ms; undefined before its first. */
  startOffsetMs(agent: string): number | undefined {
    const samples = this.#offsets.get(agent);
    return samples && samples.length > 0 ? Math.min(...samples) : undefined;
  }

  /** The mean start of the agent's recent calls after their request's admission, ms; undefined before its first. */
  meanStartOffsetMs(agent: string): number | undefined {
    const samples = this.#offsets.get(agent);
    return samples && samples.length > 0 ? samples.reduce((sum, t) => sum + t, 0) / samples.length : undefined;
  }

  /** Mean counted tokens of the agent's recent calls, else its prior; undefined when neither is known. */
  tokensPerCall(agent: string): number | undefined {
    const samples = this.#tokens.get(agent);
    if (!samples || samples.length === 0) {
      const prior = this.#prior.tokensPerCall;
      return typeof prior === 'number' ? prior : prior && Object.hasOwn(prior, agent) ? prior[agent] : undefined;
    }
    return samples.reduce((sum, t) => sum + t, 0) / samples.length;
  }

  /** Mean tokens per call over every agent seen (else the prior's): the cost assumed for an agent not seen yet. */
  meanTokensPerCall(): number | undefined {
    let sum = 0;
    let n = 0;
    for (const samples of this.#tokens.values()) {
      for (const t of samples) sum += t;
      n += samples.length;
    }
    if (n > 0) return sum / n;
    const prior = this.#prior.tokensPerCall;
    if (typeof prior === 'number') return prior;
    const values = prior ? Object.values(prior) : [];
    return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length;
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
