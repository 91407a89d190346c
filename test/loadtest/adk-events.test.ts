// Reading ADK API-server answers: recorded from `npx adk api_server` (ADK JS 2.0.0, the
// fixtures js-*), and in the shapes ADK Python (pydantic, float-second timestamps, error
// frames) and ADK Java (Jackson, epoch ms, `data:` without a space, a stream that just ends)
// serialise them (python-*, java-*).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normaliseEvent, parseSse, readEvents, readJsonRun, readRunResponse, readSseRun, timestampMs, UNKNOWN_AUTHOR } from '../../loadtest/k6/adk-events.ts';
import { adkRoutes, messageText, runBody, sessionUrl } from '../../loadtest/k6/adk-request.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'adk-events', name), 'utf8');
const TREE = ['intake', 'analyst_1', 'analyst_2', 'analyst_3', 'critic', 'decision'];
const outcomes = (r: { authors: { author: string; outcome: string }[] }) => Object.fromEntries(r.authors.map((a) => [a.author, a.outcome]));

describe('ADK JS (recorded)', () => {
  it('/run: 7 model calls, one ok per author, tokens from usageMetadata', () => {
    const r = readJsonRun(fixture('js-run-ok.json'), TREE);
    expect(r.events).toBe(7);
    expect(r.modelCalls).toBe(7);
    expect(outcomes(r)).toEqual(Object.fromEntries(TREE.map((a) => [a, 'ok'])));
    expect(r.inputTokens).toBeGreaterThan(0);
    expect(r.outputTokens).toBe(7 * 20); // the mock answered 20 tokens per call
    expect(r.failure).toBeUndefined();
    expect(r.missing).toEqual([]);
  });

  it('/run with the mock throttling: errorCode "429" is rate_limited, the others ok; only answers count as calls', () => {
    const r = readJsonRun(fixture('js-run-429.json'), TREE);
    expect(outcomes(r)).toEqual({ intake: 'rate_limited', analyst_1: 'rate_limited', analyst_2: 'ok', analyst_3: 'rate_limited', critic: 'ok', decision: 'rate_limited' });
    expect(r.authors.find((a) => a.author === 'intake')?.errorCode).toBe('429');
    expect(r.modelCalls).toBe(3); // analyst_2 and critic twice; the 429s produced no response
    expect(r.failure).toBeUndefined(); // the run itself ended: its branches carry the failures
  });

  it('/run_sse streaming: partial chunks are not calls and their usage is not counted twice', () => {
    const body = fixture('js-run-sse-streaming.txt');
    const frames = parseSse(body);
    expect(frames.data.length).toBe(14); // 7 partial + 7 final
    const r = readSseRun(body, TREE);
    expect(r.modelCalls).toBe(7);
    expect(r.outputTokens).toBe(7 * 20);
    expect(outcomes(r)).toEqual(Object.fromEntries(TREE.map((a) => [a, 'ok'])));
  });

  it('/run_sse with the provider stream failing mid-way: UNKNOWN_ERROR "got status: INTERNAL" is an error per author', () => {
    const r = readSseRun(fixture('js-run-sse-stream-error.txt'), TREE);
    for (const a of TREE) expect(outcomes(r)[a], a).toBe('error');
    expect(r.modelCalls).toBe(0);
  });

  it('/run_sse error frame under HTTP 200 fails the run', () => {
    const r = readRunResponse(200, fixture('js-run-sse-error-frame.txt'), true, TREE);
    expect(r.failure?.outcome).toBe('error');
    expect(r.failure?.reason).toMatch(/no_such_app/);
    expect(r.missing).toEqual(TREE);
  });

  it('epoch-ms timestamps stay ms', () => {
    const [first] = JSON.parse(fixture('js-run-ok.json'));
    expect(normaliseEvent(first)?.timestampMs).toBe(first.timestamp);
  });
});

describe('ADK Python shapes', () => {
  it('/run: float-second timestamps become ms; 7 calls, all ok', () => {
    const events = JSON.parse(fixture('python-run-ok.json'));
    expect(normaliseEvent(events[0])?.timestampMs).toBeCloseTo(events[0].timestamp * 1000, 0);
    const r = readEvents(events, [], TREE);
    expect(r.modelCalls).toBe(7);
    expect(r.inputTokens).toBe(7 * 1230);
    expect(outcomes(r)).toEqual(Object.fromEntries(TREE.map((a) => [a, 'ok'])));
  });

  it('/run_sse: a 429 raised out of the flow comes as an error frame: rate_limited, later authors missing', () => {
    const r = readRunResponse(200, fixture('python-run-sse-429.txt'), true, TREE);
    expect(r.failure?.outcome).toBe('rate_limited');
    expect(r.modelCalls).toBe(2);
    expect(r.missing).toEqual(['analyst_2', 'analyst_3', 'critic', 'decision']);
  });

  it('snake_case keys read the same', () => {
    const e = normaliseEvent({ author: 'a', error_code: 'RESOURCE_EXHAUSTED', usage_metadata: { prompt_token_count: 5 }, timestamp: 1.5e9 });
    expect(e).toMatchObject({ author: 'a', errorCode: 'RESOURCE_EXHAUSTED', usageMetadata: { promptTokenCount: 5 }, timestampMs: 1.5e12 });
    expect(outcomes(readEvents([{ author: 'a', error_code: 'RESOURCE_EXHAUSTED' }]))).toEqual({ a: 'rate_limited' });
  });
});

describe('ADK Java shapes', () => {
  it('a stream that just ends after some answers: only the named authors show it', () => {
    const body = fixture('java-run-sse-ended.txt');
    expect(parseSse(body).data.length).toBe(3); // `data:` with no space
    const unnamed = readSseRun(body);
    expect(unnamed.failure).toBeUndefined();
    const named = readSseRun(body, TREE);
    expect(named.missing).toEqual(['analyst_3', 'critic', 'decision']);
    expect(named.modelCalls).toBe(3);
  });

  it('a stream cut inside an event fails the run', () => {
    const body = fixture('java-run-sse-ended.txt');
    const cut = body.slice(0, body.lastIndexOf('\n\n') - 20);
    const r = readSseRun(cut);
    expect(r.failure?.reason).toMatch(/inside an event/);
  });
});

describe('error codes and HTTP failures', () => {
  it('maps the wrapper codes, provider 429s and anything else', () => {
    const wrapperTimeout = JSON.stringify({ code: 'RATE_LIMIT_TIMEOUT', error: { code: 'RATE_LIMIT_TIMEOUT', message: 'no permit' } });
    const r = readEvents([
      { author: 'a', errorCode: 'UNKNOWN_ERROR', errorMessage: wrapperTimeout },
      { author: 'b', errorCode: 'RATE_LIMITED' },
      { author: 'c', errorCode: 429 },
      { author: 'd', errorCode: 'UNKNOWN_ERROR', errorMessage: 'got status: RESOURCE_EXHAUSTED. {"error":{"code":429}}' },
      { author: 'e', errorCode: 'MAX_TOKENS' },
      { author: 'f', content: { role: 'model', parts: [{ text: 'ok' }] } },
    ]);
    expect(outcomes(r)).toEqual({ a: 'timeout', b: 'rate_limited', c: 'rate_limited', d: 'rate_limited', e: 'error', f: 'ok' });
    expect(r.authors[0].errorCode).toBe('RATE_LIMIT_TIMEOUT');
  });

  it('an error after an answer of the same author wins; an answer after an error does not undo it', () => {
    const answer = { author: 'a', content: { role: 'model', parts: [{ text: 'x' }] } };
    expect(outcomes(readEvents([answer, { author: 'a', errorCode: '500' }]))).toEqual({ a: 'error' });
    expect(outcomes(readEvents([{ author: 'a', errorCode: '500' }, answer]))).toEqual({ a: 'error' });
  });

  it('a pending function call is not a final response; the run that ends on one failed', () => {
    const call = { author: 'a', content: { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }] } };
    const r = readEvents([call]);
    expect(r.modelCalls).toBe(1);
    expect(r.authors).toEqual([]);
    expect(r.failure?.reason).toMatch(/without a final response/);
  });

  it('HTTP errors: JS 500 {error, events} keeps its events; 429 is rate_limited; Python {detail}', () => {
    const js = readRunResponse(500, JSON.stringify({ error: 'Failed to run agent: boom', events: [{ author: 'a', content: { role: 'model', parts: [{ text: 'x' }] } }] }), false);
    expect(js.failure?.reason).toMatch(/^HTTP 500: Failed to run agent: boom/);
    expect(js.modelCalls).toBe(1);
    expect(readRunResponse(429, '{}', true).failure?.outcome).toBe('rate_limited');
    expect(readRunResponse(404, JSON.stringify({ detail: 'Session not found' }), false).failure?.reason).toBe('HTTP 404: Session not found');
    expect(readRunResponse(502, '<html>bad gateway</html>', false).failure?.reason).toMatch(/^HTTP 502: not JSON/);
  });

  it('an empty answer is a failure, not a success', () => {
    expect(readJsonRun('[]').failure?.reason).toBe('no events');
    expect(readSseRun('').failure?.reason).toBe('no events');
  });

  it('names the unknown author for run-level failures', () => {
    expect(UNKNOWN_AUTHOR).toBe('unknown');
  });
});

describe('properties', () => {
  const eventArb = fc.record({
    author: fc.constantFrom('a', 'b', 'c', 'user'),
    partial: fc.boolean(),
    errorCode: fc.option(fc.constantFrom('429', 'RATE_LIMIT_TIMEOUT', '500', 'UNKNOWN_ERROR'), { nil: undefined }),
    content: fc.option(fc.record({ role: fc.constantFrom('model', 'user'), parts: fc.constant([{ text: 't' }]) }), { nil: undefined }),
    timestamp: fc.oneof(fc.double({ min: 1e9, max: 4e9, noNaN: true }), fc.integer({ min: 1e12, max: 4e12 })),
  });

  it('SSE framing round-trips any events, with \\n or \\r\\n and with or without the space after data:', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 12 }), fc.boolean(), fc.boolean(), (events, crlf, space) => {
        const nl = crlf ? '\r\n' : '\n';
        const body = events.map((e) => `data:${space ? ' ' : ''}${JSON.stringify(e)}${nl}${nl}`).join('');
        const frames = parseSse(body);
        expect(frames.data).toEqual(JSON.parse(JSON.stringify(events)));
        expect(frames.truncated).toBe(false);
      }),
    );
  });

  it('at most one outcome per author; model calls never exceed the non-partial agent events', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 30 }), (events) => {
        const r = readEvents(events);
        const authors = r.authors.map((a) => a.author);
        expect(new Set(authors).size).toBe(authors.length);
        expect(authors).not.toContain('user');
        expect(r.modelCalls).toBeLessThanOrEqual(events.filter((e) => !e.partial && e.author !== 'user').length);
      }),
    );
  });

  it('a timestamp in seconds and the same instant in ms read alike', () => {
    fc.assert(fc.property(fc.integer({ min: 1e9, max: 4e9 }), (s) => timestampMs(s) === timestampMs(s * 1000)));
  });
});

describe('what the load test sends', () => {
  it('the user message is the document, or the template with every {document} replaced', () => {
    expect(messageText(undefined, 'DOC')).toBe('DOC');
    expect(messageText('Review:\n{document}\n(again: {document})', 'DOC')).toBe('Review:\nDOC\n(again: DOC)');
  });

  it('routes sit under the base path; names carry no user id', () => {
    const r = adkRoutes('http://127.0.0.1:9', { app: 'my_app', basePath: '/api', streaming: true }, 'vu 1');
    expect(r).toEqual({
      sessions: 'http://127.0.0.1:9/api/apps/my_app/users/vu%201/sessions',
      run: 'http://127.0.0.1:9/api/run_sse',
      sessionsName: 'POST /api/apps/my_app/users/:user/sessions',
      runName: 'POST /api/run_sse',
      deleteSessionName: 'DELETE /api/apps/my_app/users/:user/sessions/:session',
      sse: true,
    });
    expect(sessionUrl(r, 's/1')).toBe('http://127.0.0.1:9/api/apps/my_app/users/vu%201/sessions/s%2F1');
    expect(adkRoutes('http://h', { app: 'a' }, 'u').run).toBe('http://h/run');
  });

  it('the run body is camelCase with the new message as a user Content', () => {
    expect(JSON.parse(runBody({ app: 'a', message: 'Q: {document}' }, 'u', 's1', 'D'))).toEqual({
      appName: 'a',
      userId: 'u',
      sessionId: 's1',
      newMessage: { role: 'user', parts: [{ text: 'Q: D' }] },
      streaming: false,
    });
  });
});
