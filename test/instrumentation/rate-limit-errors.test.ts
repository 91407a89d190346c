// Recognising rate-limit errors from the REAL client error classes and reading their delays.
import { ApiError } from '@google/genai';
import { RateLimitError } from 'openai';
import { describe, expect, it } from 'vitest';
import { isDailyQuotaError, isRateLimitError, serverRetryDelayMs } from '../../instrumentation/rate-limit-errors.ts';

function geminiError(details: unknown[], status = 429): ApiError {
  return new ApiError({
    status,
    message: JSON.stringify({ error: { code: status, message: 'Resource has been exhausted', status: 'RESOURCE_EXHAUSTED', details } }),
  });
}

describe('Gemini (@google/genai ApiError)', () => {
  it('reads a fractional RetryInfo.retryDelay', () => {
    const err = geminiError([
      { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaId: 'GenerateContentInputTokensPerModelPerMinute' }] },
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '45.8s' },
    ]);
    expect(isRateLimitError(err)).toBe(true);
    expect(serverRetryDelayMs(err)).toBeCloseTo(45_800);
    expect(isDailyQuotaError(err)).toBe(false);
  });

  it('recognises a mid-stream RESOURCE_EXHAUSTED message with a prefix', () => {
    const body = { error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '2s' }] } };
    const err = new ApiError({ status: 429, message: `got status: RESOURCE_EXHAUSTED. ${JSON.stringify(body)}` });
    expect(isRateLimitError(err)).toBe(true);
    expect(serverRetryDelayMs(err)).toBe(2000);
  });

  it('flags a per-day QuotaFailure', () => {
    const err = geminiError([
      { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaId: 'GenerateRequestsPerDayPerProjectPerModel' }] },
    ]);
    expect(isDailyQuotaError(err)).toBe(true);
  });

  it('does not take other errors for rate limits', () => {
    expect(isRateLimitError(new ApiError({ status: 500, message: '{"error":{"code":500,"status":"INTERNAL"}}' }))).toBe(false);
    expect(isRateLimitError(new Error('socket hang up'))).toBe(false);
    expect(serverRetryDelayMs(new Error('x'))).toBeUndefined();
  });
});

describe('OpenAI (openai RateLimitError)', () => {
  it('prefers retry-after-ms, then retry-after seconds', () => {
    const withMs = new RateLimitError(429, { message: 'slow down' }, 'slow down', new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }));
    expect(isRateLimitError(withMs)).toBe(true);
    expect(serverRetryDelayMs(withMs)).toBe(1500);
    const withSeconds = new RateLimitError(429, { message: 'slow down' }, 'slow down', new Headers({ 'retry-after': '3' }));
    expect(serverRetryDelayMs(withSeconds)).toBe(3000);
  });

  it('reads an HTTP-date retry-after', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const err = new RateLimitError(429, {}, 'x', new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }));
    expect(serverRetryDelayMs(err, () => now)).toBe(5000);
  });

  it('flags insufficient_quota and requests-per-day limits', () => {
    const quota = new RateLimitError(429, { code: 'insufficient_quota', message: 'You exceeded your current quota' }, undefined, new Headers());
    expect(isDailyQuotaError(quota)).toBe(true);
    const rpd = new RateLimitError(429, { message: 'Rate limit reached on requests per day (RPD)' }, undefined, new Headers());
    expect(isDailyQuotaError(rpd)).toBe(true);
    const rpm = new RateLimitError(429, { message: 'Rate limit reached on requests per min (RPM)' }, undefined, new Headers());
    expect(isDailyQuotaError(rpm)).toBe(false);
  });
});
