// Test helpers for code that wires RateLimitedLlm: a clock that moves only when told to, and
// a scripted model delegate (the model is not under test, the limiter is). Each call of the
// fake runs `script`, which yields responses or throws; the fake counts calls and tracks how
// many are running at once.
import { BaseLlm, type BaseLlmConnection, type LlmRequest, type LlmResponse } from '@google/adk';

export { ManualClock } from './clock.ts';

export interface FakeCall {
  readonly index: number;
  readonly request: LlmRequest;
  readonly stream: boolean;
  readonly signal: AbortSignal | undefined;
}

export type Script = (call: FakeCall) => AsyncGenerator<LlmResponse, void>;

export class FakeLlm extends BaseLlm {
  calls: FakeCall[] = [];
  inFlight = 0;
  maxInFlight = 0;
  finished = 0;
  readonly #script: Script;

  constructor(script: Script, model = 'fake-model') {
    super({ model });
    this.#script = script;
  }

  async *generateContentAsync(request: LlmRequest, stream = false, signal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    const call = { index: this.calls.length, request, stream, signal };
    this.calls.push(call);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      yield* this.#script(call);
    } finally {
      this.inFlight--;
      this.finished++;
    }
  }

  connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error('not supported'));
  }
}

export function textResponse(text: string, totalTokenCount?: number, partial = false): LlmResponse {
  return {
    content: { role: 'model', parts: [{ text }] },
    partial,
    ...(totalTokenCount === undefined ? {} : { usageMetadata: { totalTokenCount, promptTokenCount: Math.floor(totalTokenCount / 2), candidatesTokenCount: totalTokenCount - Math.floor(totalTokenCount / 2) } }),
  };
}

/** A model request as ADK builds it, labelled with the calling agent when given. */
export function fakeRequest(agent?: string, text = 'review this'): LlmRequest {
  return {
    contents: [{ role: 'user', parts: [{ text }] }],
    config: agent ? { labels: { adk_agent_name: agent } } : {},
    toolsDict: {},
    liveConnectConfig: {},
  } as LlmRequest;
}
