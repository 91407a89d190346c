// The real @google/genai client and ADK's Gemini model, pointed at the mock by base URL only.
import { Gemini, InMemoryRunner, isFinalResponse, LlmAgent, LogLevel, StreamingMode, setLogLevel, stringifyContent } from '@google/adk';
import { ApiError, GoogleGenAI, type HttpOptions } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { instant } from './helpers.ts';

let provider: MockProvider;
let client: GoogleGenAI;
const systemInstruction = 'You are terse.'; // 15 characters
const prompt = 'Review this document, please.'; // 29 characters → (15 + 29) / 4 = 11 tokens

beforeAll(async () => {
  provider = await startMockProvider({ ...instant, outputTokens: { kind: 'fixed', value: 90 }, streamChunkTokens: 40 }, { port: 0 });
  client = new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: provider.url } });
});
afterAll(async () => {
  await provider.close();
});

describe('@google/genai against the mock', () => {
  it('plain call returns text and the usage the rules predict', async () => {
    const response = await client.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: prompt,
      config: { systemInstruction },
    });
    expect(response.usageMetadata).toMatchObject({ promptTokenCount: 11, candidatesTokenCount: 90, totalTokenCount: 101 });
    expect(response.text).toHaveLength(90 * 4);
    expect(response.candidates?.[0].finishReason).toBe('STOP');
  });

  it('the same prompt gets the same text (seeded)', async () => {
    const a = await client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'same prompt' });
    const b = await client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'same prompt' });
    const c = await client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'other prompt' });
    expect(a.text).toBe(b.text);
    expect(a.text).not.toBe(c.text);
  });

  it('maxOutputTokens caps the answer with finishReason MAX_TOKENS', async () => {
    const response = await client.models.generateContent({ model: 'gemini-2.5-flash', contents: prompt, config: { maxOutputTokens: 7 } });
    expect(response.usageMetadata?.candidatesTokenCount).toBe(7);
    expect(response.candidates?.[0].finishReason).toBe('MAX_TOKENS');
  });

  it('streaming call yields chunks, with full usage and finishReason on the last', async () => {
    const stream = await client.models.generateContentStream({ model: 'gemini-2.5-flash', contents: prompt, config: { systemInstruction } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks).toHaveLength(3); // 40 + 40 + 10 tokens
    const last = chunks.at(-1);
    expect(last?.usageMetadata).toMatchObject({ promptTokenCount: 11, candidatesTokenCount: 90, totalTokenCount: 101 });
    expect(last?.candidates?.[0].finishReason).toBe('STOP');
    expect(chunks.map((c) => c.text).join('')).toHaveLength(360);
  });

  it('countTokens uses the same rule', async () => {
    const counted = await client.models.countTokens({ model: 'gemini-2.5-flash', contents: 'x'.repeat(401) });
    expect(counted.totalTokens).toBe(101);
  });

  it('over quota surfaces ApiError 429 with RetryInfo retryDelay', async () => {
    const limited = await startMockProvider({ ...instant, requestsPerMinute: 1 }, { port: 0 });
    try {
      const c = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: limited.url } });
      await c.models.generateContent({ model: 'gemini-2.5-flash', contents: 'one' });
      const error = await c.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'two' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(429);
      const body = JSON.parse((error as ApiError).message);
      expect(body.error.status).toBe('RESOURCE_EXHAUSTED');
      const retryDelay = body.error.details.find((d: { '@type': string }) => d['@type'].endsWith('RetryInfo')).retryDelay;
      expect(retryDelay).toMatch(/^\d+(\.\d{3}|\.\d{6}|\.\d{9})?s$/);
      const seconds = Number(retryDelay.slice(0, -1));
      expect(seconds).toBeGreaterThan(0);
      expect(seconds).toBeLessThanOrEqual(60);
    } finally {
      await limited.close();
    }
  });
});

class MockGemini extends Gemini {
  protected override getHttpOptions(): HttpOptions {
    return { ...super.getHttpOptions(), baseUrl: provider.url };
  }
}

async function runTurn(agent: LlmAgent, streaming: boolean) {
  const runner = new InMemoryRunner({ agent, appName: 'mock-test' });
  const session = await runner.sessionService.createSession({ appName: 'mock-test', userId: 'u1' });
  const events = [];
  for await (const event of runner.runAsync({
    userId: 'u1',
    sessionId: session.id,
    newMessage: { role: 'user', parts: [{ text: prompt }] },
    runConfig: { streamingMode: streaming ? StreamingMode.SSE : StreamingMode.NONE },
  })) {
    events.push(event);
  }
  return events;
}

describe('ADK Gemini model through LlmAgent and InMemoryRunner', () => {
  beforeAll(() => setLogLevel(LogLevel.ERROR));

  for (const streaming of [false, true]) {
    it(`completes a turn (${streaming ? 'SSE streaming' : 'plain'})`, async () => {
      const model = new MockGemini({ model: 'gemini-2.5-flash', apiKey: 'test-key' });
      const agent = new LlmAgent({ name: 'reviewer', model, instruction: 'Review the document.' });
      const events = await runTurn(agent, streaming);
      const final = events.find((e) => isFinalResponse(e) && e.author === 'reviewer');
      expect(final?.errorCode).toBeUndefined();
      expect(stringifyContent(final!)).toHaveLength(360);
      expect(final?.usageMetadata?.candidatesTokenCount).toBe(90);
      if (streaming) expect(events.filter((e) => e.partial).length).toBe(3);
    });
  }

  it('a tool-declaring agent gets a function call, runs the tool, then gets text', async () => {
    const { FunctionTool } = await import('@google/adk');
    const { z } = await import('zod');
    const calls: unknown[] = [];
    const lookup = new FunctionTool({
      name: 'lookup_policy',
      description: 'Looks up a policy by topic',
      parameters: z.object({ topic: z.string() }),
      execute: async (args: { topic: string }) => {
        calls.push(args);
        return { policy: `policy for ${args.topic}` };
      },
    });
    const model = new MockGemini({ model: 'gemini-2.5-flash', apiKey: 'test-key' });
    const agent = new LlmAgent({ name: 'tooluser', model, instruction: 'Use the tool.', tools: [lookup] });
    const events = await runTurn(agent, false);
    expect(calls).toEqual([{ topic: 'sample' }]);
    const final = events.find((e) => isFinalResponse(e) && e.author === 'tooluser');
    expect(stringifyContent(final!)).toHaveLength(360);
  });
});
