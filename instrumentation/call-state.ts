// One model call's shared state, between the consumer-facing generator of RateLimitedLlm,
// the call the wrapper drives, and the sweeper that reclaims a permit held too long: whether
// the provider call ended, its permit and reclaim time, its abort, and the usage its responses
// reported (the final response's, else the last partial one's; never summed).
import type { LlmResponse } from '@google/adk';
import type { Usage } from './call-observers.ts';
import type { HeldCall } from './permit-sweeper.ts';
import type { Permit } from './semaphore.ts';

/** A response's usage as the call reports it; undefined when it reported none. */
function usageOf(response: LlmResponse): Usage | undefined {
  const u = response.usageMetadata;
  if (!u) return undefined;
  const input = u.promptTokenCount;
  const output = u.candidatesTokenCount === undefined && u.thoughtsTokenCount === undefined
    ? undefined
    : (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0);
  const total = u.totalTokenCount ?? (input ?? 0) + (output ?? 0);
  if (u.totalTokenCount === undefined && input === undefined && output === undefined) return undefined;
  return { total, input, output };
}

/**
 * One model call's shared state: between the consumer-facing generator, the call the wrapper
 * drives, and the sweeper that reclaims a permit held too long. A class, so the hot path
 * allocates one object instead of a closure per concern.
 */
export class CallState implements HeldCall {
  /** The provider call is over (permit released, tokens settled). */
  ended = false;
  /** When the permit is reclaimed if still held (set on admission). */
  deadline = Number.POSITIVE_INFINITY;
  permit: Permit | undefined;
  /** Set by the running delegate step: makes it give up at once when the call is aborted. */
  interrupt: ((reason: unknown) => void) | undefined;
  /** Its signal goes to the delegate and to every wait. */
  readonly controller = new AbortController();
  /** A response reached the consumer's buffer (a retry would show output twice). */
  yielded = false;
  /** Usage of the final (non-partial) response, and of the last partial one that reported usage. */
  finalUsage: Usage | undefined;
  lastPartialUsage: Usage | undefined;
  /** Whether its prompt carries its request's own message (an AgentTool's agent runs on the tool's input); undefined outside a request. */
  carriesMessage: boolean | undefined;
  readonly #onReclaim: (state: CallState) => void;

  constructor(onReclaim: (state: CallState) => void) {
    this.#onReclaim = onReclaim;
  }

  /**
   * Abort the provider call. Every abort goes through here, which also stops the running
   * delegate step without an event listener (Node's EventTarget listeners are costly on the hot path).
   */
  cancel(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort(reason);
    this.interrupt?.(reason);
  }

  reclaim(): void {
    this.#onReclaim(this);
  }

  /** Note a response from the delegate. Streamed partials carry usage too: keep the final response's, else the last seen. Never sum. */
  sawResponse(response: LlmResponse): void {
    this.yielded = true;
    const u = usageOf(response);
    if (u && !response.partial) this.finalUsage = u;
    else if (u) this.lastPartialUsage = u;
  }
}
