// The real `openai` client against the mock's chat completions endpoint.
import OpenAI, { RateLimitError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { FakeClock, instant } from './helpers.ts';

let provider: MockProvider;
let client: OpenAI;
const clock = new FakeClock(0);
const messages = [
  { role: 'system' as const, content: 'Be brief.' }, // 9 characters
  { role: 'user' as const, content: 'Summarise the document.' }, // 23 characters → 32 / 4 = 8 tokens
];

beforeAll(async () => {
  provider = await startMockProvider(
    { ...instant, outputTokens: { kind: 'fixed', value: 50 }, streamChunkTokens: 20, requestsPerMinute: 5, tokensPerMinute: 1000 },
    { port: 0, clock },
  );
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${provider.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await provider.close();
});

describe('openai client against the mock', () => {
  it('plain completion with usage and x-ratelimit headers', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    expect(data.usage).toEqual({ prompt_tokens: 8, completion_tokens: 50, total_tokens: 58 });
    expect(data.choices[0].message.content).toHaveLength(200);
    expect(data.choices[0].finish_reason).toBe('stop');
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('5');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('4');
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe('992');
    expect(response.headers.get('x-ratelimit-reset-requests')).toBe('1m0s');
  });

  it('streaming with include_usage: chunks, then a usage chunk, then [DONE]', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: unknown;
    let finish: string | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBe(4); // 20 + 20 + 10 tokens, then the usage chunk
    expect(text).toHaveLength(200);
    expect(finish).toBe('stop');
    expect(usage).toEqual({ prompt_tokens: 8, completion_tokens: 50, total_tokens: 58 });
  });

  it('streaming without include_usage has no usage', async () => {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
    for await (const chunk of stream) expect(chunk.usage ?? undefined).toBeUndefined();
  });

  it('over quota: RateLimitError 429 rate_limit_exceeded with retry-after', async () => {
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    const error = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const limitError = error as RateLimitError;
    expect(limitError.status).toBe(429);
    expect(limitError.code).toBe('rate_limit_exceeded');
    expect(limitError.type).toBe('requests');
    expect(limitError.message).toContain('requests per min (RPM): Limit 5');
    expect(limitError.headers?.get('retry-after')).toBe('60');
    expect(limitError.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    clock.advance(60_000);
    const ok = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    expect(ok.usage?.total_tokens).toBe(58);
  });

  it('tools: answers with tool calls, then text once the tool result is in', async () => {
    await fetch(`${provider.url}/admin/reset`, { method: 'POST' });
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ];
    const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
    const call = first.choices[0].message.tool_calls?.[0];
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' && call.function.name).toBe('get_weather');
    const second = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call!.id, content: 'sunny' }],
    });
    expect(second.choices[0].finish_reason).toBe('stop');
  });
});
