// The mock provider's answers without its sockets, on a given clock: a model an ADK agent can
// call that counts the prompt, answers (text, or every declared function until the tool's
// result is back) and takes the time the mock's config gives, exactly as the mock over HTTP
// would (its own functions: gemini.ts's request text and tool calls, completion.ts's answer
// and pace). The forward run (forward-run.ts) runs a tree's requests through the real
// limiters on a manual clock with it, so a minute of calls costs milliseconds.
import { BaseLlm, type LlmRequest, type LlmResponse } from '@google/adk';
import { type Clock, sleep } from '../../instrumentation/clock.ts';
import { answerPace, planAnswer } from '../../mock-provider/completion.ts';
import type { MockConfig } from '../../mock-provider/config.ts';
import { requestText, toolCallsFor } from '../../mock-provider/gemini.ts';
import type { GenerateRequest } from '../../mock-provider/gemini-request.ts';
import type { Random } from '../../mock-provider/random.ts';
import { tokensForCharacters } from '../../mock-provider/tokens.ts';

type Part = { text?: string };

/** An ADK request as the Gemini body it is sent as: its contents, system instruction and tools. */
function bodyOf(request: LlmRequest): GenerateRequest {
  const instruction = request.config?.systemInstruction;
  const systemInstruction =
    typeof instruction === 'string' ? { parts: [{ text: instruction }] } : instruction && typeof instruction === 'object' && 'parts' in instruction ? { parts: (instruction.parts ?? []) as Part[] } : undefined;
  return {
    contents: request.contents.map((content) => ({ role: content.role, parts: (content.parts ?? []) as Part[] })),
    ...(systemInstruction ? { systemInstruction } : {}),
    ...(request.config?.tools ? { tools: request.config.tools as GenerateRequest['tools'] } : {}),
  } as GenerateRequest;
}

export class MockModel extends BaseLlm {
  readonly #state: { readonly config: MockConfig; readonly random: Random };
  readonly #clock: Clock;

  /** `random`: the draws of every model of one run, in call order (the mock's one stream). */
  constructor(model: string, config: MockConfig, random: Random, clock: Clock) {
    super({ model });
    this.#state = { config, random };
    this.#clock = clock;
  }

  override async *generateContentAsync(request: LlmRequest, _stream?: boolean, signal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    const body = bodyOf(request);
    const prompt = requestText(body);
    const config = this.#state.config;
    const answer = planAnswer(this.#state, {
      api: 'gemini',
      model: this.model,
      apiKey: 'forward-run',
      prompt,
      inputTokens: tokensForCharacters(prompt.length),
      maxOutputTokens: request.config?.maxOutputTokens,
      stream: false,
      toolCalls: config.answerToolCalls ? toolCallsFor(body) : undefined,
    });
    const { ttftMs, perTokenMs } = answerPace(this.#state);
    await sleep(this.#clock, ttftMs + Math.max(0, answer.outputTokenCount - 1) * perTokenMs, signal);
    const input = answer.request.inputTokens;
    const parts = answer.request.toolCalls ? answer.request.toolCalls.map((call) => ({ functionCall: call })) : [{ text: answer.text }];
    yield {
      content: { role: 'model', parts },
      usageMetadata: { promptTokenCount: input, candidatesTokenCount: answer.outputTokenCount, totalTokenCount: input + answer.outputTokenCount },
    };
  }

  override connect(): never {
    throw new Error('the forward run makes no live connection');
  }
}
