// Reads the answer of an ADK API server's /run (a JSON array of Events) or /run_sse (one
// `data: <Event JSON>` frame per event) into what the load test records: one outcome per
// author, the model calls and the tokens of the request. Pure: the k6 script and Node tests
// both import it. It tolerates the differences between ADK Python, Java, JS and Go: float
// seconds or epoch-ms timestamps, snake_case keys, `data: {"error": …}` frames sent under an
// HTTP 200 already sent (Python, JS), a stream that just ends (Java).
import { type BranchOutcome, effectiveErrorCode, ERROR_CODES, outcomeOfErrorCode } from '../../instrumentation/errors.ts';

/** The author recorded for a failure that names no agent (an error frame, an HTTP error). */
export const UNKNOWN_AUTHOR = 'unknown';

/** The fields of an ADK Event the load test reads. */
export interface AdkEvent {
  author?: string;
  partial?: boolean;
  errorCode?: string;
  errorMessage?: string;
  content?: { role?: string; parts?: Record<string, unknown>[] };
  usageMetadata?: { promptTokenCount?: number; candidatesTokenCount?: number };
  /** Epoch milliseconds, whatever unit the server used. */
  timestampMs?: number;
}

export interface AuthorOutcome {
  author: string;
  outcome: BranchOutcome;
  errorCode?: string;
}

export interface RunReading {
  /** Events read (error frames not counted). */
  events: number;
  /** One per author that left an event, in the order they first appeared. */
  authors: AuthorOutcome[];
  /** Non-partial model responses (an answer, a function call, or a finish-reason error with usage). */
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Expected authors (when the caller named them) that left no outcome. */
  missing: string[];
  /** Why the run as a whole failed; absent when it ended with a final response. */
  failure?: { outcome: BranchOutcome; reason: string };
}

// Epoch seconds stay below this until the year 5138; epoch ms passed it in 1973.
const SECONDS_LIMIT = 1e11;

/** Python sends float seconds since the epoch, Java and JS epoch milliseconds. */
export function timestampMs(value: number): number {
  return value < SECONDS_LIMIT ? value * 1000 : value;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
// Python also accepts and may send snake_case; the other languages send camelCase.
const field = (o: Json, camel: string, snake: string): unknown => (o[camel] !== undefined ? o[camel] : o[snake]);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** One event object as a server sent it, normalised; undefined when it is not an event. */
export function normaliseEvent(raw: unknown): AdkEvent | undefined {
  if (!isObject(raw)) return undefined;
  const usage = field(raw, 'usageMetadata', 'usage_metadata');
  const content = raw.content;
  const code = field(raw, 'errorCode', 'error_code');
  const message = field(raw, 'errorMessage', 'error_message');
  const ts = num(raw.timestamp);
  return {
    author: typeof raw.author === 'string' ? raw.author : undefined,
    partial: raw.partial === true,
    errorCode: typeof code === 'string' || typeof code === 'number' ? String(code) : code === undefined || code === null ? undefined : JSON.stringify(code),
    errorMessage: typeof message === 'string' ? message : undefined,
    content: isObject(content)
      ? { role: typeof content.role === 'string' ? content.role : undefined, parts: Array.isArray(content.parts) ? content.parts.filter(isObject) : [] }
      : undefined,
    usageMetadata: isObject(usage)
      ? { promptTokenCount: num(field(usage, 'promptTokenCount', 'prompt_token_count')), candidatesTokenCount: num(field(usage, 'candidatesTokenCount', 'candidates_token_count')) }
      : undefined,
    timestampMs: ts === undefined ? undefined : timestampMs(ts),
  };
}

const hasPart = (e: AdkEvent, key: string, snake: string): boolean => (e.content?.parts ?? []).some((p) => p[key] !== undefined || p[snake] !== undefined);

/** A model response: what one provider call produced (tool results and the user's turn are not). */
function isModelResponse(e: AdkEvent): boolean {
  if (e.partial || !e.author || e.author === 'user') return false;
  return e.usageMetadata !== undefined || e.content?.role === 'model';
}

/** ADK's isFinalResponse, on the wire shape: no pending function call or result, not partial, not an error. */
function isFinalResponse(e: AdkEvent): boolean {
  if (e.partial || e.errorCode !== undefined || !e.author || e.author === 'user') return false;
  return !hasPart(e, 'functionCall', 'function_call') && !hasPart(e, 'functionResponse', 'function_response');
}

/** The outcome an error text stands for, where no code came with it (error frames, HTTP errors). */
export function outcomeOfErrorText(text: string): BranchOutcome {
  if (text.includes(ERROR_CODES.timeout)) return 'timeout';
  if (/\b429\b|RESOURCE_EXHAUSTED|RATE_LIMITED/.test(text)) return 'rate_limited';
  return 'error';
}

/**
 * Folds events (and the texts of error frames) into one reading. An error wins over an
 * earlier answer of the same author; the run failed when an error frame came, or when its
 * last event is not a final response (a stream that ended early). A stream that ends right
 * after some agent's final answer (Java on an error) shows only as `missing` authors, so
 * name the tree's authors to catch it.
 */
export function readEvents(raw: readonly unknown[], errorFrames: readonly string[] = [], expectedAuthors: readonly string[] = []): RunReading {
  const events = raw.map(normaliseEvent).filter((e): e is AdkEvent => e !== undefined);
  const byAuthor = new Map<string, AuthorOutcome>();
  let modelCalls = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  for (const e of events) {
    if (isModelResponse(e)) {
      modelCalls++;
      inputTokens += e.usageMetadata?.promptTokenCount ?? 0;
      outputTokens += e.usageMetadata?.candidatesTokenCount ?? 0;
    }
    if (!e.author || e.author === 'user') continue;
    const seen = byAuthor.get(e.author);
    if (e.errorCode !== undefined) {
      const code = effectiveErrorCode(e.errorCode, e.errorMessage);
      // A stream that fails mid-way arrives as UNKNOWN_ERROR "got status: RESOURCE_EXHAUSTED. {…}".
      const outcome = code === 'UNKNOWN_ERROR' && e.errorMessage ? outcomeOfErrorText(e.errorMessage) : outcomeOfErrorCode(code);
      byAuthor.set(e.author, { author: e.author, outcome, errorCode: code });
    } else if (!seen && isFinalResponse(e)) {
      byAuthor.set(e.author, { author: e.author, outcome: 'ok' });
    }
  }
  const missing = expectedAuthors.filter((a) => !byAuthor.has(a));
  const reading: RunReading = { events: events.length, authors: [...byAuthor.values()], modelCalls, inputTokens, outputTokens, missing };
  if (errorFrames.length > 0) {
    const text = errorFrames.join('; ');
    reading.failure = { outcome: outcomeOfErrorText(text), reason: `error frame: ${text}` };
  } else if (events.length === 0) {
    reading.failure = { outcome: 'error', reason: 'no events' };
  } else if (!isFinalResponse(events[events.length - 1]) && events[events.length - 1].errorCode === undefined) {
    reading.failure = { outcome: 'error', reason: 'the run ended without a final response' };
  }
  return reading;
}

export interface SseFrames {
  /** The `data` of each complete frame, parsed. */
  data: unknown[];
  /** Frames whose data was not JSON. */
  unparsed: string[];
  /** The body ended inside a frame (the connection closed mid-event). */
  truncated: boolean;
}

/** Splits a text/event-stream body into its frames' data (multi-line data joined with \n). */
export function parseSse(body: string): SseFrames {
  const text = body.replace(/\r\n?/g, '\n');
  const blocks = text.split('\n\n');
  const tail = blocks.pop() ?? '';
  const out: SseFrames = { data: [], unparsed: [], truncated: tail.trim() !== '' };
  for (const block of blocks) {
    const lines = block.split('\n').filter((l) => l.startsWith('data:'));
    if (lines.length === 0) continue; // comments, retry:, event: only
    const data = lines.map((l) => l.slice(l.startsWith('data: ') ? 6 : 5)).join('\n');
    try {
      out.data.push(JSON.parse(data));
    } catch {
      out.unparsed.push(data);
    }
  }
  return out;
}

/** `{"error": "…"}` with no event fields: the frame Python and JS send when a run throws mid-stream. */
function errorFrameText(value: unknown): string | undefined {
  if (!isObject(value) || value.error === undefined || value.author !== undefined) return undefined;
  return typeof value.error === 'string' ? value.error : JSON.stringify(value.error);
}

/** Reads a /run_sse answer body. */
export function readSseRun(body: string, expectedAuthors: readonly string[] = []): RunReading {
  const frames = parseSse(body);
  const errors: string[] = [];
  const events: unknown[] = [];
  for (const d of frames.data) {
    const error = errorFrameText(d);
    if (error !== undefined) errors.push(error);
    else events.push(d);
  }
  errors.push(...frames.unparsed.map((u) => `not JSON: ${u.slice(0, 200)}`));
  const reading = readEvents(events, errors, expectedAuthors);
  if (!reading.failure && frames.truncated) reading.failure = { outcome: 'error', reason: 'the stream ended inside an event' };
  return reading;
}

/**
 * Reads a /run answer body: a JSON array of events, or an error object (ADK JS answers
 * 500 `{error, events}`; Python's FastAPI `{detail}`), which still yields the events it holds.
 */
export function readJsonRun(body: string, expectedAuthors: readonly string[] = []): RunReading {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ...readEvents([], [], expectedAuthors), failure: { outcome: outcomeOfErrorText(body), reason: `not JSON: ${body.slice(0, 200)}` } };
  }
  if (Array.isArray(parsed)) return readEvents(parsed, [], expectedAuthors);
  if (isObject(parsed)) {
    const events = Array.isArray(parsed.events) ? parsed.events : [];
    const error = parsed.error ?? parsed.detail;
    const text = typeof error === 'string' ? error : JSON.stringify(error ?? parsed);
    return { ...readEvents(events, [], expectedAuthors), failure: { outcome: outcomeOfErrorText(text), reason: text.slice(0, 500) } };
  }
  return { ...readEvents([], [], expectedAuthors), failure: { outcome: 'error', reason: 'the answer is not a list of events' } };
}

/** Reads a run's HTTP answer. A non-2xx status fails the run whatever the body holds. */
export function readRunResponse(status: number, body: string, sse: boolean, expectedAuthors: readonly string[] = []): RunReading {
  const reading = sse && status >= 200 && status < 300 ? readSseRun(body, expectedAuthors) : readJsonRun(body, expectedAuthors);
  if (status < 200 || status >= 300) {
    const reason = `HTTP ${status}${reading.failure ? `: ${reading.failure.reason}` : ''}`;
    reading.failure = { outcome: status === 429 ? 'rate_limited' : (reading.failure?.outcome ?? 'error'), reason };
  }
  return reading;
}
