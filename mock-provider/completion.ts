// One model call, independent of the wire format: random throttling, quota admission,
// fault selection, sampling of output length and latency, then a plain or streamed answer
// paced by those latencies. gemini.ts and openai.ts supply the wire format.
import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_LATENCY_MS, MAX_OUTPUT_TOKENS, MAX_PER_TOKEN_MS, MAX_TIMER_MS } from './config.ts';
import { MAX_SCHEMA_DEPTH } from './http.ts';
import type { FaultName, ApiName } from './metrics.ts';
import type { QuotaLease, QuotaName } from './quota.ts';
import { sample } from './random.ts';
import type { MockState } from './state.ts';
import { CHARS_PER_TOKEN, outputText, tokensForCharacters } from './tokens.ts';

export interface ToolCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** What an API adapter extracted from a valid request. */
export interface CompletionRequest {
  readonly api: ApiName;
  readonly model: string;
  /** The caller the quota is kept for: the API key, or `projects/{id}` on Vertex AI's project routes. */
  readonly apiKey: string;
  /** All text of the request (seeds the output text). */
  readonly prompt: string;
  readonly inputTokens: number;
  readonly maxOutputTokens: number | undefined;
  readonly stream: boolean;
  /** When set, the answer is these function calls instead of text. */
  readonly toolCalls: readonly ToolCall[] | undefined;
}

/** The answer decided for an admitted request. */
export interface CompletionPlan {
  readonly request: CompletionRequest;
  readonly id: string;
  readonly createdMs: number;
  /** Output text of `outputTokenCount` 4-character tokens ('' for tool calls). */
  readonly text: string;
  readonly outputTokenCount: number;
  /** The output was cut at the request's max output tokens. */
  readonly truncated: boolean;
}

/** Why a request got a 429. */
export interface RateLimit {
  readonly reason: QuotaName | 'random';
  /** For a quota: its limit and the ms until it admits this request (Infinity: never). */
  readonly limit?: number;
  readonly retryMs?: number;
}

/** The wire format of one API. */
export interface ApiFormat {
  /** Headers every response carries (OpenAI's x-ratelimit-*). */
  commonHeaders?(res: ServerResponse, request: CompletionRequest): void;
  rateLimited(res: ServerResponse, request: CompletionRequest, limit: RateLimit): void;
  serverError(res: ServerResponse, status: 500 | 503): void;
  complete(res: ServerResponse, plan: CompletionPlan): void;
  /** One SSE event for tokens [from, to); `last` carries finish reason and full usage. */
  chunk(plan: CompletionPlan, from: number, to: number, last: boolean): string;
  streamError(plan: CompletionPlan): string;
  /** Written after the last chunk ('' for Gemini, `data: [DONE]` for OpenAI). */
  readonly streamEnd: string;
}

/**
 * A plausible value for a JSON-schema or Gemini-schema (type: 'STRING' etc.) node. Request
 * validation bounds the nesting (MAX_SCHEMA_DEPTH); past it this answers a plain string anyway.
 */
function sampleArgument(schema: unknown, depth = 0): unknown {
  if (depth > MAX_SCHEMA_DEPTH) return 'sample';
  const node = (typeof schema === 'object' && schema !== null ? schema : {}) as Record<string, unknown>;
  const type = String(node.type ?? 'string').toLowerCase();
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0];
  if (type === 'number' || type === 'integer') return 1;
  if (type === 'boolean') return true;
  if (type === 'array') return [sampleArgument(node.items, depth + 1)];
  if (type === 'object') {
    const properties = (node.properties ?? {}) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, sampleArgument(value, depth + 1)]));
  }
  return 'sample';
}

/** Arguments for a function call, built from its parameters schema. */
export function sampleArguments(schema: unknown): Record<string, unknown> {
  const value = sampleArgument(schema ?? { type: 'object' });
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

let nextId = 0;

/** Ends pauses early when the client goes away; the AbortController is made only if a pause needs one. */
class Pacer {
  closed = false;
  #controller: AbortController | undefined;

  close(): void {
    this.closed = true;
    this.#controller?.abort();
  }

  /** Sleeps unless the client went away; false when it did. */
  async pause(ms: number): Promise<boolean> {
    if (this.closed) return false;
    if (ms <= 0) return true;
    this.#controller ??= new AbortController();
    try {
      await sleep(Math.min(ms, MAX_TIMER_MS), undefined, { signal: this.#controller.signal });
      return true;
    } catch {
      return false;
    }
  }
}

function drawFault(state: MockState, stream: boolean): FaultName | null {
  const f = state.config.faults;
  const total =
    f.http500Probability +
    f.http503Probability +
    f.connectionResetProbability +
    f.stallProbability +
    (stream ? f.streamErrorProbability : 0);
  if (total === 0) return null;
  // One draw, faults checked in a fixed order, so their probabilities add up.
  let r = state.random();
  const faults: [FaultName, number][] = [
    ['http_500', f.http500Probability],
    ['http_503', f.http503Probability],
    ['connection_reset', f.connectionResetProbability],
    ['stall', f.stallProbability],
    ['stream_error', stream ? f.streamErrorProbability : 0],
  ];
  for (const [fault, probability] of faults) {
    if (r < probability) return fault;
    r -= probability;
  }
  return null;
}

/** The answer to an admitted request: its text (or tool calls) and output length, drawn from the config's distributions. */
export function planAnswer(state: Pick<MockState, 'config' | 'random'>, request: CompletionRequest): CompletionPlan {
  const config = state.config;
  const id = `mock-${config.seed}-${++nextId}`;
  const createdMs = Date.now();
  if (request.toolCalls) {
    const count = tokensForCharacters(JSON.stringify(request.toolCalls).length);
    return { request, id, createdMs, text: '', outputTokenCount: count, truncated: false };
  }
  const wanted = Math.max(1, Math.round(sample(config.outputTokens, state.random, MAX_OUTPUT_TOKENS)));
  const count = request.maxOutputTokens === undefined ? wanted : Math.min(wanted, request.maxOutputTokens);
  const text = outputText(config.seed, request.prompt, count);
  return { request, id, createdMs, text, outputTokenCount: count, truncated: count < wanted };
}

/** How fast an answer comes: ms to its first token, then ms per further output token. */
export function answerPace(state: Pick<MockState, 'config' | 'random'>): { ttftMs: number; perTokenMs: number } {
  const ttftMs = sample(state.config.timeToFirstTokenMs, state.random, MAX_LATENCY_MS);
  return { ttftMs, perTokenMs: sample(state.config.perOutputTokenMs, state.random, MAX_PER_TOKEN_MS) };
}

/** Tokens [from, to) of a plan's text. */
export function textOf(plan: CompletionPlan, from: number, to: number): string {
  return plan.text.slice(from * CHARS_PER_TOKEN, to * CHARS_PER_TOKEN);
}

/** Writes a JSON body without express's res.json machinery (this is the hot path). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body)); // encode once; byteLength + write would scan twice
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': bytes.length });
  res.end(bytes);
}

/** Answers one model call; resolves when the response is over (or the client left). */
export async function serveCompletion(
  state: MockState,
  req: IncomingMessage,
  res: ServerResponse,
  request: CompletionRequest,
  format: ApiFormat,
): Promise<void> {
  const { metrics } = state;
  const { api, model } = request;
  const startedMs = performance.now();
  const pacer = new Pacer();
  let lease: QuotaLease | undefined;
  let sentTokens = 0;
  metrics.inFlight.inc();
  res.once('close', () => {
    pacer.close();
    metrics.inFlight.dec();
    lease?.finish(sentTokens);
    if (sentTokens > 0) metrics.tokens.inc({ type: 'output' }, sentTokens);
    const status = res.writableFinished ? String(res.statusCode) : 'aborted';
    metrics.requests.inc({ api, model, status });
    metrics.requestDuration.observe({ api }, (performance.now() - startedMs) / 1000);
  });
  const config = state.config;

  if (config.throttleProbability > 0 && state.random() < config.throttleProbability) {
    metrics.rateLimited.inc({ api, reason: 'random' });
    format.commonHeaders?.(res, request);
    format.rateLimited(res, request, { reason: 'random' });
    return;
  }
  const admission = state.quota.admit(request.apiKey, request.model, request.inputTokens, config);
  format.commonHeaders?.(res, request); // after admission: "remaining" includes this request
  if (!admission.ok) {
    metrics.rateLimited.inc({ api, reason: admission.quota });
    format.rateLimited(res, request, { reason: admission.quota, limit: admission.limit, retryMs: admission.retryMs });
    return;
  }
  lease = admission;
  metrics.tokens.inc({ type: 'input' }, request.inputTokens);

  const fault = drawFault(state, request.stream);
  if (fault) metrics.faults.inc({ fault });
  if (fault === 'http_500' || fault === 'http_503') {
    format.serverError(res, fault === 'http_500' ? 500 : 503);
    return;
  }
  const answer = planAnswer(state, request);
  const { ttftMs, perTokenMs } = answerPace(state);
  const dropConnection = (): void => {
    req.socket.destroy();
  };
  const stall = async () => {
    await pacer.pause(config.faults.stallMs);
    dropConnection();
  };

  if (!request.stream) {
    if (!(await pacer.pause(ttftMs))) return;
    metrics.timeToFirstToken.observe({ api }, (performance.now() - startedMs) / 1000);
    if (fault === 'connection_reset') return dropConnection();
    if (fault === 'stall') return stall();
    if (!(await pacer.pause((answer.outputTokenCount - 1) * perTokenMs))) return;
    sentTokens = answer.outputTokenCount;
    format.complete(res, answer);
    return;
  }

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  if (!(await pacer.pause(ttftMs))) return;
  metrics.timeToFirstToken.observe({ api }, (performance.now() - startedMs) / 1000);
  const chunkTokens = config.streamChunkTokens;
  const total = answer.text.length / CHARS_PER_TOKEN;
  let chunksSent = 0;
  let from = 0;
  do {
    if (fault === 'stream_error' && chunksSent === config.faults.streamErrorAfterChunks) {
      res.end(format.streamError(answer));
      return;
    }
    if (chunksSent > 0 && !(await pacer.pause(chunkTokens * perTokenMs))) return;
    const to = Math.min(total, from + chunkTokens);
    const last = to >= total;
    res.write(format.chunk(answer, from, to, last));
    sentTokens = last ? answer.outputTokenCount : to;
    from = to;
    chunksSent++;
    if (fault === 'connection_reset') return dropConnection();
    if (fault === 'stall') return stall();
  } while (from < total);
  if (fault === 'stream_error' && chunksSent <= config.faults.streamErrorAfterChunks) {
    // Shorter stream than N chunks: the error still comes, in place of the end.
    res.end(format.streamError(answer));
    return;
  }
  res.end(format.streamEnd);
}
