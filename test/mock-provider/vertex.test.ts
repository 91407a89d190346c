// Vertex AI routes in the mock, driven by the real @google/genai client in Vertex mode over
// a real socket. The client's credential is a real google-auth-library OAuth2Client holding
// a fixed access token (no token endpoint is reached), or an API key in express mode; ADK's
// own Gemini model gets its token by Application Default Credentials from the mock's
// metadata-server endpoint.
import { InMemoryRunner, isFinalResponse, LlmAgent, LogLevel, setLogLevel } from '@google/adk';
import { ApiError, GoogleGenAI } from '@google/genai';
import { OAuth2Client } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METADATA_TOKEN } from '../../mock-provider/metadata.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { FakeClock, instant } from './helpers.ts';

const MODEL = 'gemini-2.5-flash';
let provider: MockProvider;
const clock = new FakeClock();

/** A Vertex client for `project` whose requests carry `Authorization: Bearer <token>`. */
function vertexClient(project: string, token: string, apiVersion?: string): GoogleGenAI {
  const authClient = new OAuth2Client();
  authClient.setCredentials({ access_token: token, expiry_date: Date.now() + 3_600_000 });
  return new GoogleGenAI({ vertexai: true, project, location: 'us-central1', apiVersion, googleAuthOptions: { authClient }, httpOptions: { baseUrl: provider.url } });
}

async function status(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (e) {
    if (e instanceof ApiError) return e.status;
    throw e;
  }
}

beforeAll(async () => {
  // Three requests per minute per quota key, on a clock the test moves.
  provider = await startMockProvider({ ...instant, requestsPerMinute: 3 }, { port: 0, clock });
});
afterAll(async () => {
  await provider.close();
});

describe('Vertex AI routes', () => {
  it('generateContent and streamGenerateContent answer a Vertex-mode client (v1beta1 and v1)', async () => {
    const client = vertexClient('proj-answers', 'token-a');
    const response = await client.models.generateContent({ model: MODEL, contents: 'Review this.' });
    expect(response.text).toHaveLength(20 * 4);
    expect(response.usageMetadata?.candidatesTokenCount).toBe(20);
    let streamed = '';
    for await (const chunk of await client.models.generateContentStream({ model: MODEL, contents: 'Review this.' })) streamed += chunk.text ?? '';
    expect(streamed).toHaveLength(20 * 4);
    const v1 = await vertexClient('proj-answers', 'token-a', 'v1').models.generateContent({ model: MODEL, contents: 'Review this.' });
    expect(v1.text).toHaveLength(20 * 4);
  });

  it('the quota is the project: another token of the same project shares it, another project does not', async () => {
    clock.advance(60_000);
    const a1 = vertexClient('proj-a', 'token-1');
    const a2 = vertexClient('proj-a', 'token-2');
    const b = vertexClient('proj-b', 'token-1');
    const ask = (c: GoogleGenAI) => status(c.models.generateContent({ model: MODEL, contents: 'x' }));
    expect([await ask(a1), await ask(a1), await ask(a2)]).toEqual([200, 200, 200]);
    expect(await ask(a2)).toBe(429);
    expect(await ask(a1)).toBe(429);
    expect(await ask(b)).toBe(200);
    clock.advance(60_000); // the next minute window
    expect(await ask(a1)).toBe(200);
  });

  it("a 429 has Vertex's body: RESOURCE_EXHAUSTED, no QuotaFailure or RetryInfo", async () => {
    clock.advance(60_000);
    const c = vertexClient('proj-429', 't');
    for (let i = 0; i < 3; i++) await c.models.generateContent({ model: MODEL, contents: 'x' });
    const error = await c.models.generateContent({ model: MODEL, contents: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    const body = JSON.parse((error as ApiError).message) as { error: { code: number; status: string; message: string; details?: unknown } };
    expect(body.error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
    expect(body.error.message).toMatch(/^Resource exhausted/);
    expect(body.error.details).toBeUndefined();
  });

  it('express mode (an API key, no project) calls /publishers/google/models and keys the quota by the API key', async () => {
    clock.advance(60_000);
    const seen: string[] = [];
    const express = (apiKey: string) =>
      new GoogleGenAI({
        vertexai: true,
        apiKey,
        httpOptions: {
          baseUrl: provider.url,
          fetch: (input, init) => {
            seen.push(new URL(String(input instanceof Request ? input.url : input)).pathname);
            return fetch(input, init);
          },
        },
      });
    const k1 = express('key-1');
    for (let i = 0; i < 3; i++) await k1.models.generateContent({ model: MODEL, contents: 'x' });
    expect(await status(k1.models.generateContent({ model: MODEL, contents: 'x' }))).toBe(429);
    expect(await status(express('key-2').models.generateContent({ model: MODEL, contents: 'x' }))).toBe(200);
    expect(seen[0]).toBe(`/v1beta1/publishers/google/models/${MODEL}:generateContent`);
  });

  it('without a credential the answer is 401 UNAUTHENTICATED; unknown versions and models 404', async () => {
    const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] });
    const post = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${provider.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const project = `/v1beta1/projects/p/locations/us-central1/publishers/google/models/${MODEL}:generateContent`;
    const unauthenticated = await post(project);
    expect(unauthenticated.status).toBe(401);
    expect(((await unauthenticated.json()) as { error: { status: string } }).error.status).toBe('UNAUTHENTICATED');
    expect((await post(`/v1beta1/publishers/google/models/${MODEL}:generateContent`)).status).toBe(401);
    expect((await post(project, { authorization: 'Bearer t' })).status).toBe(200);
    expect((await post(project.replace('v1beta1', 'v1beta'), { authorization: 'Bearer t' })).status).toBe(404);
    expect((await post(project.replace(MODEL, 'no-such-model'), { authorization: 'Bearer t' })).status).toBe(404);
  });

  it('an unmodified ADK agent on Vertex, set up by environment only, reaches the mock with an ADC token', async () => {
    clock.advance(60_000);
    const seen: { path: string; authorization: string | undefined }[] = [];
    provider.server.prependListener('request', (req) => {
      if (req.url?.includes('/publishers/google/models/')) seen.push({ path: req.url, authorization: req.headers.authorization });
    });
    const host = provider.url.replace('http://', '');
    const env = {
      GOOGLE_GENAI_USE_VERTEXAI: 'true',
      GOOGLE_CLOUD_PROJECT: 'proj-adk',
      GOOGLE_CLOUD_LOCATION: 'us-central1',
      GOOGLE_VERTEX_BASE_URL: provider.url,
      GCE_METADATA_HOST: host, // Application Default Credentials ask the "metadata server" for a token
    };
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      setLogLevel(LogLevel.ERROR);
      const agent = new LlmAgent({ name: 'vertex_reviewer', model: MODEL, instruction: 'Review.' });
      const runner = new InMemoryRunner({ agent, appName: 'vertex' });
      const session = await runner.sessionService.createSession({ appName: 'vertex', userId: 'u' });
      const events = [];
      for await (const e of runner.runAsync({ userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: 'Review this.' }] } })) events.push(e);
      const final = events.find((e) => isFinalResponse(e));
      expect(final?.errorCode).toBeUndefined();
      expect(final?.usageMetadata?.candidatesTokenCount).toBe(20);
      expect(seen).toEqual([{ path: `/v1beta1/projects/proj-adk/locations/us-central1/publishers/google/models/${MODEL}:generateContent`, authorization: `Bearer ${METADATA_TOKEN}` }]);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('the metadata token endpoint wants the Metadata-Flavor header, like the real one', async () => {
    const path = `${provider.url}/computeMetadata/v1/instance/service-accounts/default/token`;
    expect((await fetch(path)).status).toBe(403);
    const ok = await fetch(path, { headers: { 'metadata-flavor': 'Google' } });
    expect(ok.headers.get('metadata-flavor')).toBe('Google');
    expect(await ok.json()).toMatchObject({ access_token: METADATA_TOKEN, token_type: 'Bearer' });
    const probe = await fetch(`${provider.url}/`, { headers: { 'metadata-flavor': 'Google' } });
    expect([probe.status, probe.headers.get('metadata-flavor')]).toEqual([200, 'Google']);
    expect((await fetch(`${provider.url}/`)).status).toBe(404);
  });
});
