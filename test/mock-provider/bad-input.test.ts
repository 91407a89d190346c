// Bad input answers a 4xx that names the problem, and the server keeps serving.
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { generate, instant, json } from './helpers.ts';
import { samplesOf, sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

let provider: MockProvider;
const ADMIN_TOKEN = 'test-admin-token-123';

beforeAll(async () => {
  provider = await startMockProvider({ ...instant, maxBodyBytes: 1024 * 1024 }, { port: 0, adminToken: ADMIN_TOKEN });
});
afterAll(async () => {
  await provider.close();
});

const geminiUrl = () => `${provider.url}/v1beta/models/gemini-2.5-flash:generateContent`;
const geminiHeaders = { 'content-type': 'application/json', 'x-goog-api-key': 'k' };

async function expectStillServing(): Promise<void> {
  const response = await generate(provider.url, 'still there?');
  expect(response.status).toBe(200);
}

interface Case {
  name: string;
  send: () => Promise<Response>;
  status: number;
  message: RegExp;
}

/**
 * JSON text of a schema of `depth` object levels, { type: object, properties: { a: { ... } } },
 * built as text: JSON.stringify itself would overflow the stack of a test worker.
 */
function deepSchema(depth: number): string {
  return `${'{"type":"object","properties":{"a":'.repeat(depth)}{"type":"string"}${'}}'.repeat(depth)}`;
}

const cases: Case[] = [
  {
    name: 'a tool parameter schema nested 10,000 levels deep',
    send: () =>
      fetch(geminiUrl(), {
        method: 'POST',
        headers: geminiHeaders,
        body: `{"contents":[{"parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"deep","parametersJsonSchema":${deepSchema(10_000)}}]}]}`,
      }),
    status: 400,
    message: /tools\.0\.functionDeclarations\.0\.parametersJsonSchema: nested deeper than 128 levels/,
  },
  {
    name: 'a Gemini-style parameters schema nested 10,000 levels deep',
    send: () =>
      fetch(geminiUrl(), {
        method: 'POST',
        headers: geminiHeaders,
        body: `{"contents":[{"parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"deep","parameters":${deepSchema(10_000)}}]}]}`,
      }),
    status: 400,
    message: /tools\.0\.functionDeclarations\.0\.parameters: nested deeper than 128 levels/,
  },
  {
    name: 'OpenAI: a tool parameter schema nested 10,000 levels deep',
    send: () =>
      fetch(`${provider.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk' },
        body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"deep","parameters":${deepSchema(10_000)}}}]}`,
      }),
    status: 400,
    message: /tools\.0\.function\.parameters: nested deeper than 128 levels/,
  },
  {
    name: 'malformed JSON',
    send: () => fetch(geminiUrl(), { method: 'POST', headers: geminiHeaders, body: '{"contents": [' }),
    status: 400,
    message: /malformed JSON body/,
  },
  {
    name: 'wrong content type',
    send: () => fetch(geminiUrl(), { method: 'POST', headers: { ...geminiHeaders, 'content-type': 'text/plain' }, body: '{}' }),
    status: 415,
    message: /content-type must be application\/json \(got "text\/plain"\)/,
  },
  {
    name: 'missing contents',
    send: () => fetch(geminiUrl(), { method: 'POST', headers: geminiHeaders, body: JSON.stringify({ generationConfig: {} }) }),
    status: 400,
    message: /invalid GenerateContentRequest: contents: /,
  },
  {
    name: 'a part with a non-string text',
    send: () => fetch(geminiUrl(), { method: 'POST', headers: geminiHeaders, body: JSON.stringify({ contents: [{ parts: [{ text: 5 }] }] }) }),
    status: 400,
    message: /contents\.0\.parts\.0\.text/,
  },
  {
    name: 'a 20 MB body',
    send: () => fetch(geminiUrl(), { method: 'POST', headers: geminiHeaders, body: `{"contents":[{"parts":[{"text":"${'x'.repeat(20 * 1024 * 1024)}"}]}]}` }),
    status: 413,
    message: /larger than the limit of 1048576 bytes/,
  },
  {
    name: 'unknown model',
    send: () =>
      fetch(`${provider.url}/v1beta/models/gemini-9-ultra:generateContent`, {
        method: 'POST',
        headers: geminiHeaders,
        body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }),
      }),
    status: 404,
    message: /models\/gemini-9-ultra is not found/,
  },
  {
    name: 'no API key',
    send: () => fetch(geminiUrl(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
    status: 403,
    message: /unregistered callers/,
  },
  {
    name: 'streaming without alt=sse',
    send: () =>
      fetch(`${provider.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent`, {
        method: 'POST',
        headers: geminiHeaders,
        body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }),
      }),
    status: 400,
    message: /alt=sse/,
  },
  {
    name: 'OpenAI: missing messages',
    send: () =>
      fetch(`${provider.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk' },
        body: JSON.stringify({ model: 'gpt-4o-mini' }),
      }),
    status: 400,
    message: /invalid chat completion request: messages: /,
  },
  {
    name: 'OpenAI: unknown model',
    send: () =>
      fetch(`${provider.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk' },
        body: JSON.stringify({ model: 'gpt-99', messages: [{ role: 'user', content: 'x' }] }),
      }),
    status: 404,
    message: /The model `gpt-99` does not exist/,
  },
  {
    name: 'bad admin config',
    send: () =>
      fetch(`${provider.url}/admin/config`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ requestsPerMinute: 10, quotaWindow: 'hourly', faults: { http500Probability: 2 } }),
      }),
    status: 400,
    message: /quotaWindow: .*; faults\.http500Probability: /,
  },
  {
    name: 'bad timeline step',
    send: () =>
      fetch(`${provider.url}/admin/config`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ timeline: [{ at: 10, set: { tokensPerMinute: 'half' } }] }),
      }),
    status: 400,
    message: /timeline\.0\.set: tokensPerMinute: /,
  },
  {
    name: 'wrong admin token',
    send: () => fetch(`${provider.url}/admin/config`, { headers: { authorization: 'Bearer wrong-token-000000' } }),
    status: 401,
    message: /admin token missing or wrong/,
  },
  {
    name: 'missing admin token',
    send: () => fetch(`${provider.url}/admin/reset`, { method: 'POST' }),
    status: 401,
    message: /admin token missing or wrong/,
  },
];

describe('bad input', () => {
  for (const c of cases) {
    it(`${c.name} → ${c.status} with a clear error, then a good request succeeds`, async () => {
      const response = await c.send();
      expect(response.status).toBe(c.status);
      const body = await json<{ error: { message: string } }>(response);
      expect(body.error.message).toMatch(c.message);
      await expectStillServing();
    });
  }

  it('a tool schema 63 object levels deep (127 JSON levels) is fine: the call is answered with sampled arguments', async () => {
    const response = await fetch(geminiUrl(), {
      method: 'POST',
      headers: geminiHeaders,
      body: `{"contents":[{"parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"ok","parametersJsonSchema":${deepSchema(63)}}]}]}`,
    });
    expect(response.status).toBe(200);
    const body = await json<{ candidates: { content: { parts: { functionCall: { args: unknown } }[] } }[] }>(response);
    let args = body.candidates[0].content.parts[0].functionCall.args as Record<string, unknown>;
    for (let i = 0; i < 62; i++) args = args.a as Record<string, unknown>;
    expect(args).toEqual({ a: 'sample' });
  });

  it('a rejected admin config changes nothing', async () => {
    const config = await json<{ requestsPerMinute: number; quotaWindow: string }>(
      await fetch(`${provider.url}/admin/config`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }),
    );
    expect(config.requestsPerMinute).toBe(1000);
    expect(config.quotaWindow).toBe('fixed');
  });

  it('counts client errors in the request metric', async () => {
    const text = await (await fetch(`${provider.url}/metrics`)).text();
    const requests = (labels: Record<string, string>) => samplesOf(text, 'mock_provider_requests_total', labels).map((s) => s.value);
    expect(requests({ api: 'gemini', model: 'unknown', status: '404' })).toEqual([1]);
    expect(requests({ api: 'gemini', model: 'gemini-2.5-flash', status: '415' })).toEqual([1]);
  });
});

describe('a client that leaves mid-body', () => {
  const incomplete = (text: string, api: string) => sumOfMetric(text, 'mock_provider_incomplete_requests_total', { api });
  /** Sends headers announcing 10,000 bytes, about 100 of them, then closes the connection. */
  async function leaveMidBody(method: string, path: string, headers: string): Promise<void> {
    const socket = connect(provider.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 10000\r\n${headers}\r\n`);
    socket.write(`{"contents":[{"parts":[{"text":"${'x'.repeat(60)}`);
    await sleep(20);
    socket.destroy();
  }

  it('is counted and logged as one line, not as an unexpected error with a stack', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      await leaveMidBody('POST', '/v1beta/models/gemini-2.5-flash:generateContent', 'x-goog-api-key: k\r\n');
      await leaveMidBody('POST', '/v1/chat/completions', 'authorization: Bearer sk\r\n');
      await leaveMidBody('PUT', '/admin/config', `authorization: Bearer ${ADMIN_TOKEN}\r\n`);
      let text = '';
      for (let i = 0; i < 100; i++) {
        text = await (await fetch(`${provider.url}/metrics`)).text();
        if (incomplete(text, 'openai') === 1) break;
        await sleep(10);
      }
      expect(incomplete(text, 'gemini')).toBe(1);
      expect(incomplete(text, 'openai')).toBe(1);
      const lines = logged.mock.calls.map((args) => args.map(String).join(' '));
      expect(lines.filter((line) => /unexpected error/.test(line))).toEqual([]);
      expect(lines.filter((line) => /left before sending the whole request body/.test(line))).toHaveLength(3);
      for (const line of lines) expect(line).not.toMatch(/\n\s+at /); // no stack trace
      await expectStillServing();
    } finally {
      logged.mockRestore();
    }
  });
});
