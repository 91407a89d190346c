// What one model call of each agent costs on one limiter, learned from the calls it
// finished: counted tokens per call per agent, and the call time. Request admission funds a
// whole request with it (calls per agent x tokens per call) and knows from the call time how
// long a request's critical path takes. Memory is bounded: a fixed window of recent calls per
// agent, and agents are the tree's (a few names).

/** Calls remembered per agent. */
const WINDOW = 50;
/** Weight of the newest call in the mean call time. */
const CALL_TIME_WEIGHT = 0.1;

export class CallCostModel {
  readonly #tokens = new Map<string, number[]>();
  #meanCallMs: number | undefined;

  /** Note a finished call: its counted tokens and how long the provider call took. */
  observe(agent: string, countedTokens: number, callMs: number): void {
    if (Number.isFinite(countedTokens) && countedTokens >= 0) {
      let samples = this.#tokens.get(agent);
      if (!samples) {
        samples = [];
        this.#tokens.set(agent, samples);
      }
      samples.push(countedTokens);
      if (samples.length > WINDOW) samples.shift();
    }
    if (Number.isFinite(callMs) && callMs >= 0) {
      this.#meanCallMs = this.#meanCallMs === undefined ? callMs : this.#meanCallMs + CALL_TIME_WEIGHT * (callMs - this.#meanCallMs);
    }
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
