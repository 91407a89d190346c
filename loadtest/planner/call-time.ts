// How long one model call takes: the time to its first token, then its output streamed token
// by token. A call that answers with a function call (an LlmAgent's tool turn) has a few
// output tokens and takes little more than its first token, so a model whose calls include
// tool turns spends less time per call than a full answer takes: Little's law needs each
// model's own mean.

/** Share of a full answer's call time spent streaming output after the first token (the mock's shape under `start`). */
export const STREAMING_SHARE = 0.9;

/** A call's latency shape. */
export interface CallLatency {
  readonly firstTokenSeconds: number;
  readonly perOutputTokenSeconds: number;
}

/** The shape whose full answer of `outputTokensPerCall` tokens takes `callSeconds`, STREAMING_SHARE of it after the first token. */
export function latencyOfFullAnswer(callSeconds: number, outputTokensPerCall: number): CallLatency {
  return {
    firstTokenSeconds: callSeconds * (1 - STREAMING_SHARE),
    perOutputTokenSeconds: (callSeconds * STREAMING_SHARE) / Math.max(1, outputTokensPerCall - 1),
  };
}

/**
 * Seconds a call with `outputTokens` output tokens takes. Linear in the output, so the mean
 * over calls is the call time of their mean output.
 */
export function callSecondsFor(latency: CallLatency, outputTokens: number): number {
  return latency.firstTokenSeconds + Math.max(0, outputTokens - 1) * latency.perOutputTokenSeconds;
}
