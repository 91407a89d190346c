// Tokens per call from the tree itself: one request through the real ADK tree against a
// private mock provider (no latency, the run's mean output length), with the session history
// ADK builds, so a loop's later turns and a summary that reads the earlier answers are
// counted at the size they really have. The mock counts input tokens as the provider does and
// reports them in each response's usage; every model of the tree is pointed at it for the one
// request and given back afterwards.
import { type BaseAgent, BaseLlm, InMemoryRunner, type LlmAgent, type LlmRequest, type LlmResponse } from '@google/adk';
import { ProviderGemini } from '../../agent/provider-model.ts';
import { agentNameOf } from '../../instrumentation/rate-limited-llm.ts';
import { startMockProvider } from '../../mock-provider/index.ts';

/** What one agent's calls carried in the calibration request. */
export interface AgentTokens {
  readonly agent: string;
  readonly model: string;
  readonly calls: number;
  /** Input tokens of its calls, added up (the provider's count). */
  readonly inputTokens: number;
  /** Output tokens of its calls, added up: a tool turn answers with a short function call. */
  readonly outputTokens: number;
}

export interface Calibration {
  /** Characters of the user message the request sent. */
  readonly messageChars: number;
  /** Output tokens every answer had (the run's mean). */
  readonly outputTokensPerCall: number;
  readonly agents: readonly AgentTokens[];
}

export class CalibrationError extends Error {
  override name = 'CalibrationError';
}

/** Records each call's agent (read before delegating: Gemini deletes the label) and the input and output tokens its usage reports. */
class RecordingLlm extends BaseLlm {
  readonly #delegate: BaseLlm;
  readonly #record: (agent: string, inputTokens: number, outputTokens: number) => void;
  constructor(delegate: BaseLlm, record: (agent: string, inputTokens: number, outputTokens: number) => void) {
    super({ model: delegate.model });
    this.#delegate = delegate;
    this.#record = record;
  }
  override async *generateContentAsync(request: LlmRequest, stream?: boolean): AsyncGenerator<LlmResponse, void> {
    const agent = agentNameOf(request);
    let input: number | undefined;
    let output: number | undefined;
    for await (const response of this.#delegate.generateContentAsync(request, stream)) {
      if (response.errorCode) throw new CalibrationError(`agent "${agent}": the calibration call failed: ${response.errorCode} ${response.errorMessage ?? ''}`.trim());
      input = response.usageMetadata?.promptTokenCount ?? input;
      output = response.usageMetadata?.candidatesTokenCount ?? output;
      yield response;
    }
    this.#record(agent, input ?? 0, output ?? 0);
  }
  override connect(): never {
    throw new CalibrationError('live connections are not calibrated');
  }
}

/** The model an agent calls: its own name, else the one it inherits. */
function modelNameOf(agent: LlmAgent): string {
  const model = agent.model;
  if (typeof model === 'string' && model !== '') return model;
  if (model !== undefined && typeof model !== 'string') return model.model;
  return agent.canonicalModel.model;
}

/**
 * Runs one request with `message` through the tree of `root` and reports each agent's input
 * tokens; `agents` are the tree's LLM agents (llmAgentsOf its walk), pointed at the private
 * mock for the request. Throws CalibrationError when a call fails (a model the mock does not
 * serve, a custom model).
 */
export async function calibrateTree(
  root: BaseAgent,
  agents: readonly LlmAgent[],
  options: { message: string; outputTokensPerCall: number; timeoutMs?: number },
): Promise<Calibration> {
  const mock = await startMockProvider(
    {
      timeToFirstTokenMs: { kind: 'fixed', value: 0 },
      perOutputTokenMs: { kind: 'fixed', value: 0 },
      outputTokens: { kind: 'fixed', value: Math.max(1, Math.round(options.outputTokensPerCall)) },
      requestsPerMinute: 100_000_000,
      tokensPerMinute: 1_000_000_000_000,
    },
    { port: 0, host: '127.0.0.1' },
  );
  const originals = agents.map((agent) => agent.model);
  const byAgent = new Map<string, AgentTokens>();
  try {
    for (const agent of agents) {
      const model = modelNameOf(agent);
      const delegate = new ProviderGemini({ providerUrl: mock.url, apiKey: 'quotascope-calibration', model, httpTimeoutMs: 30_000 });
      agent.model = new RecordingLlm(delegate, (name, inputTokens, outputTokens) => {
        const seen = byAgent.get(name) ?? { agent: name, model, calls: 0, inputTokens: 0, outputTokens: 0 };
        byAgent.set(name, { ...seen, calls: seen.calls + 1, inputTokens: seen.inputTokens + inputTokens, outputTokens: seen.outputTokens + outputTokens });
      });
    }
    const runner = new InMemoryRunner({ agent: root, appName: 'calibration' });
    const session = await runner.sessionService.createSession({ appName: 'calibration', userId: 'calibration' });
    const deadline = AbortSignal.timeout(options.timeoutMs ?? 60_000);
    for await (const event of runner.runAsync({ userId: 'calibration', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: options.message }] } })) {
      if (event.errorCode) throw new CalibrationError(`agent "${event.author}": ${event.errorCode} ${event.errorMessage ?? ''}`.trim());
      if (deadline.aborted) throw new CalibrationError(`the calibration request took longer than ${(options.timeoutMs ?? 60_000) / 1000} s`);
    }
  } catch (error) {
    if (error instanceof CalibrationError) throw error;
    throw new CalibrationError(`the calibration request failed: ${(error as Error).message}`);
  } finally {
    agents.forEach((agent, i) => {
      agent.model = originals[i];
    });
    await mock.close();
  }
  if (byAgent.size === 0) throw new CalibrationError('the calibration request made no model call');
  return { messageChars: options.message.length, outputTokensPerCall: options.outputTokensPerCall, agents: [...byAgent.values()] };
}

/** Per model: the mean of `tokens` per call over the calibration request's calls. */
function meanPerModel(calibration: Calibration, tokens: (a: AgentTokens) => number): Map<string, number> {
  const sums = new Map<string, { calls: number; tokens: number }>();
  for (const a of calibration.agents) {
    const s = sums.get(a.model) ?? { calls: 0, tokens: 0 };
    sums.set(a.model, { calls: s.calls + a.calls, tokens: s.tokens + tokens(a) });
  }
  return new Map([...sums].map(([model, s]) => [model, s.tokens / s.calls]));
}

/** Per model: the mean input tokens per call over the calibration request's calls. */
export function inputTokensPerModel(calibration: Calibration): Map<string, number> {
  return meanPerModel(calibration, (a) => a.inputTokens);
}

/** Per model: the mean output tokens per call (tool turns answer short), what its call time follows. */
export function outputTokensPerModel(calibration: Calibration): Map<string, number> {
  return meanPerModel(calibration, (a) => a.outputTokens);
}

/** What the per-model plans took their tokens per call from. */
export function tokensNote(calibration: Calibration | undefined): string {
  if (!calibration) return 'input tokens per call as given';
  const agents = calibration.agents.map((a) => `${a.agent} ${Math.round(a.inputTokens / a.calls).toLocaleString('en-US')}`).join(', ');
  return `input tokens per call calibrated from one request with session history: ${agents}`;
}
