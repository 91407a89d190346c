// The Gemini routes are served outside express (the hot path): they must match the same
// URLs express matched, read the key from ?key=, and answer every mismatch clearly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { outputText } from '../../mock-provider/tokens.ts';
import { instant, json } from './helpers.ts';

let provider: MockProvider;
beforeAll(async () => {
  provider = await startMockProvider({ ...instant, seed: 3 }, { port: 0 });
});
afterAll(async () => {
  await provider.close();
});

const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'route me' }] }] });
const post = (path: string, headers: Record<string, string> = { 'x-goog-api-key': 'k' }) =>
  fetch(`${provider.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

interface GeminiAnswer {
  candidates: { content: { parts: { text: string }[] }; finishReason: string }[];
  usageMetadata: { candidatesTokenCount: number };
}

describe('Gemini routes', () => {
  it.each([
    ['/v1beta/models/gemini-2.5-flash:generateContent', 'the usual path'],
    ['/v1/models/gemini-2.5-flash:generateContent', 'v1'],
    ['/v1beta/models/gemini-2.5-flash:generateContent/', 'a trailing slash'],
    ['/v1beta/MODELS/gemini-2.5-flash:generateContent', 'any case of "models", as express matched'],
    ['/v1beta/models/gemini-2.5-flash%3AgenerateContent', 'a percent-encoded colon'],
    ['/v1beta/models/gemini-2.5-flash:generateContent?foo=bar', 'an unrelated query'],
  ])('%s (%s) answers the seeded text', async (path) => {
    const response = await post(path);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const answer = await json<GeminiAnswer>(response);
    expect(answer.candidates[0].content.parts[0].text).toBe(outputText(3, 'route me', 20));
    expect(answer.candidates[0].finishReason).toBe('STOP');
  });

  it('takes the API key from ?key= when there is no header', async () => {
    const response = await post('/v1beta/models/gemini-2.5-flash:generateContent?key=from-query', {});
    expect(response.status).toBe(200);
    const noKey = await post('/v1beta/models/gemini-2.5-flash:generateContent?key=', {});
    expect(noKey.status).toBe(403);
  });

  it.each([
    ['/v2/models/gemini-2.5-flash:generateContent', 404, /unknown API version v2/],
    ['/v1beta/models/gemini-2.5-flash:embedContent', 404, /unknown method "embedContent"/],
    ['/v1beta/models/gemini-2.5-flash', 404, /unknown method ""/],
    ['/v1beta/models/gemini-2.5-flash%E0%A4%A:generateContent', 400, /malformed percent-encoding/],
  ])('%s → %i in Google format', async (path, status, message) => {
    const response = await post(path);
    expect(response.status).toBe(status);
    const error = await json<{ error: { code: number; message: string; status: string } }>(response);
    expect(error.error.code).toBe(status);
    expect(error.error.message).toMatch(message);
  });

  it('other methods and paths fall through to express (404 naming the route), and it keeps serving', async () => {
    const get = await fetch(`${provider.url}/v1beta/models/gemini-2.5-flash:generateContent`);
    expect(get.status).toBe(404);
    expect((await json<{ error: { message: string } }>(get)).error.message).toBe('no route for GET /v1beta/models/gemini-2.5-flash:generateContent');
    const deeper = await post('/v1beta/models/gemini-2.5-flash/extra:generateContent');
    expect(deeper.status).toBe(404);
    expect((await json<{ error: { message: string } }>(deeper)).error.message).toMatch(/^no route for POST/);
    expect((await post('/v1beta/models/gemini-2.5-flash:generateContent')).status).toBe(200);
    expect((await fetch(`${provider.url}/healthz`)).status).toBe(200);
  });
});
