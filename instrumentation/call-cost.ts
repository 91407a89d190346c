// What one model call of each agent costs on one limiter, learned from the calls it
// finished: counted tokens per call per agent, and the call time. Request admission funds a
// whole request with it (calls per agent x tokens per call) and knows from the call time how
// long a request's critical path takes. Memory is bounded: a fixed window of recent calls per
// agent, and agents are the tree's (a few names).
// It also learns when each agent's calls start after their request is admitted (the earliest
// of its recent calls), so a request's later calls are held against the window only from then.

/** Calls remembered per agent. */
const WINDOW = 50;
/** Weight of the newest call in the mean call time. */
const CALL_TIME_WEIGHT = 0.1;

export class CallCostModel {
  readonly #tokens = new Map<string, number[]>();
  readonly #offsets = new Map<string, number[]>();
  #meanCallMs: number | undefined;
  readonly #onObserved = new Set<() => void>();

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

  /** Mean counted tokens of the agent's recent calls; undefined before its first call. */
  tokensPerCall(agent: string): number | undefined {
    const samples = this.#tokens.get(agent);
    if (!samples || samples.length === 0) return undefined;
    return samples.reduce((sum, t) => sum + t, 0) / samples.length;
  }

  /** Mean tokens per call over every agent seen: the cost assumed for an agent not seen yet. */
  meanTokensPerCall(): number | undefined {
    let sum = 0;
    let n = 0;
    for (const samples of this.#tokens.values()) {
      for (const t of samples) sum += t;
      n += samples.length;
    }
    return n === 0 ? undefined : sum / n;
  }

  /** Mean provider call time, ms (weighted to recent calls); undefined before the first call. */
  get meanCallMs(): number | undefined {
    return this.#meanCallMs;
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
