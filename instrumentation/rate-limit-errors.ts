// Recognising a provider's rate-limit error and reading the delay it asks for.
//  - @google/genai throws ApiError { status: 429, message: <the JSON error body> }; a 429
//    that arrives mid-stream has a message "got status: RESOURCE_EXHAUSTED. {json}". The
//    delay is google.rpc.RetryInfo.retryDelay in error.details ("45.8s"); the Retry-After
//    header is not exposed by the client.
//  - openai throws APIError { status: 429, headers: Headers } with `retry-after-ms` and
//    `retry-after` (seconds or an HTTP date).
// A per-day quota (google.rpc.QuotaFailure naming a daily limit, or OpenAI's
// "requests per day"/insufficient_quota) is not worth retrying within a call's wait.

interface GoogleErrorDetail {
  '@type'?: string;
  retryDelay?: string | { seconds?: number | string; nanos?: number };
  violations?: { quotaId?: string; quotaMetric?: string; description?: string; subject?: string }[];
}

interface GoogleErrorBody {
  error?: { code?: number; status?: string; message?: string; details?: GoogleErrorDetail[] };
}

function field(err: unknown, key: string): unknown {
  return typeof err === 'object' && err !== null ? (err as Record<string, unknown>)[key] : undefined;
}

function messageOf(err: unknown): string {
  const message = field(err, 'message');
  return typeof message === 'string' ? message : '';
}

/** The Google error body embedded in an error's message (pure JSON or "prefix {json}"). */
export function googleErrorBody(err: unknown): GoogleErrorBody | undefined {
  const message = messageOf(err);
  const start = message.indexOf('{');
  if (start < 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(message.slice(start));
    return typeof parsed === 'object' && parsed !== null ? (parsed as GoogleErrorBody) : undefined;
  } catch {
    return undefined;
  }
}

/** Default rate-limit test: HTTP 429 or a RESOURCE_EXHAUSTED status, from genai or openai. */
export function isRateLimitError(err: unknown): boolean {
  if (field(err, 'status') === 429 || field(err, 'code') === 429) return true;
  const body = googleErrorBody(err);
  if (body?.error?.code === 429 || body?.error?.status === 'RESOURCE_EXHAUSTED') return true;
  return /\bRESOURCE_EXHAUSTED\b/.test(messageOf(err));
}

/** Parse a protobuf Duration in its JSON form ("45.8s") or object form into ms. */
function durationMs(value: GoogleErrorDetail['retryDelay']): number | undefined {
  if (typeof value === 'string') {
    const match = /^\s*(\d+(?:\.\d+)?)s\s*$/.exec(value);
    return match ? Number(match[1]) * 1000 : undefined;
  }
  if (value && typeof value === 'object') {
    const seconds = Number(value.seconds ?? 0);
    const nanos = Number(value.nanos ?? 0);
    if (Number.isFinite(seconds) && Number.isFinite(nanos)) return seconds * 1000 + nanos / 1e6;
  }
  return undefined;
}

function header(err: unknown, name: string): string | undefined {
  const headers = field(err, 'headers');
  if (!headers || typeof headers !== 'object') return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** The delay the server asked for, in ms, or undefined when the error carries none. */
export function serverRetryDelayMs(err: unknown, now: () => number = Date.now): number | undefined {
  for (const detail of googleErrorBody(err)?.error?.details ?? []) {
    if (detail['@type']?.endsWith('google.rpc.RetryInfo') || detail.retryDelay !== undefined) {
      const ms = durationMs(detail.retryDelay);
      if (ms !== undefined) return ms;
    }
  }
  const retryAfterMs = header(err, 'retry-after-ms');
  if (retryAfterMs !== undefined && Number.isFinite(Number(retryAfterMs)) && retryAfterMs.trim() !== '') {
    return Math.max(0, Number(retryAfterMs));
  }
  const retryAfter = header(err, 'retry-after');
  if (retryAfter !== undefined && retryAfter.trim() !== '') {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(0, date - now());
  }
  return undefined;
}

const DAILY = /per[\s_-]?day|daily|\bRPD\b|\bTPD\b/i;

/** True when the error names a per-day quota: retrying within seconds cannot succeed. */
export function isDailyQuotaError(err: unknown): boolean {
  for (const detail of googleErrorBody(err)?.error?.details ?? []) {
    for (const v of detail.violations ?? []) {
      if ([v.quotaId, v.quotaMetric, v.description, v.subject].some((s) => typeof s === 'string' && DAILY.test(s))) {
        return true;
      }
    }
  }
  if (field(err, 'code') === 'insufficient_quota') return true;
  const openAiError = field(err, 'error');
  if (field(openAiError, 'code') === 'insufficient_quota') return true;
  return field(err, 'status') === 429 && typeof field(err, 'headers') === 'object' && DAILY.test(messageOf(err));
}

/**
 * Which quota a 429 names: `minute` (a per-minute token or request quota: Gemini's QuotaFailure
 * quotaId/quotaMetric, OpenAI's "tokens per min (TPM)"), `other` (a quota of another kind: per
 * day, concurrent requests), or `unnamed` (none: shared capacity, e.g. Vertex's "Resource
 * exhausted" or Gemini's "check quota" without QuotaFailure).
 */
export type NamedQuota = 'minute' | 'other' | 'unnamed';

const PER_MINUTE = /per[\s_-]?min(?:ute)?\b|PerMinute|\b[TR]PM\b/i;

export function quotaNamedBy(err: unknown): NamedQuota {
  let named = false;
  for (const detail of googleErrorBody(err)?.error?.details ?? []) {
    for (const v of detail.violations ?? []) {
      const names = [v.quotaId, v.quotaMetric, v.description, v.subject].filter((s): s is string => typeof s === 'string');
      if (names.some((s) => PER_MINUTE.test(s))) return 'minute';
      if (names.length > 0) named = true;
    }
  }
  if (named) return 'other';
  if (field(err, 'status') === 429 && typeof field(err, 'headers') === 'object') {
    if (PER_MINUTE.test(messageOf(err))) return 'minute';
    if (DAILY.test(messageOf(err))) return 'other';
  }
  return 'unnamed';
}
