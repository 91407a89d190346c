// Branch outcome classification from ADK events (unit: pure logic, real ADK event objects).
import { createEvent, type Event } from '@google/adk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { collectBranchOutcomes, effectiveErrorCode, outcomeOfErrorCode } from '../../agent/outcomes.ts';
import { ERROR_CODES, RateLimitExhausted, RateLimitTimeout } from '../../instrumentation/index.ts';

function answer(author: string, text = 'fine'): Event {
  return createEvent({ invocationId: 'i', author, content: { role: 'model', parts: [{ text }] } });
}
function failure(author: string, errorCode: string, errorMessage?: string): Event {
  return createEvent({ invocationId: 'i', author, errorCode, errorMessage });
}

describe('branch outcomes', () => {
  it('maps error codes: timeout, rate_limited (wrapper code, 429, RESOURCE_EXHAUSTED), budget_unavailable, other → error', () => {
    expect(outcomeOfErrorCode(ERROR_CODES.timeout)).toBe('timeout');
    expect(outcomeOfErrorCode(ERROR_CODES.rateLimited)).toBe('rate_limited');
    expect(outcomeOfErrorCode('429')).toBe('rate_limited');
    expect(outcomeOfErrorCode('RESOURCE_EXHAUSTED')).toBe('rate_limited');
    expect(outcomeOfErrorCode(ERROR_CODES.budgetUnavailable)).toBe('budget_unavailable');
    expect(outcomeOfErrorCode('500')).toBe('error');
    expect(outcomeOfErrorCode('UNKNOWN_ERROR')).toBe('error');
  });

  it('reads the wrapper code out of the message ADK files under UNKNOWN_ERROR', () => {
    // ADK 2.0 only reads JSON.parse(message).error.code; the wrapper's errors put the code at the top.
    const timeout = new RateLimitTimeout('gemini', 'permit', 20);
    const exhausted = new RateLimitExhausted('gemini', 'attempts', 3, new Error('429'));
    expect(effectiveErrorCode('UNKNOWN_ERROR', timeout.message)).toBe('RATE_LIMIT_TIMEOUT');
    expect(effectiveErrorCode('UNKNOWN_ERROR', exhausted.message)).toBe('RATE_LIMITED');
    expect(effectiveErrorCode('UNKNOWN_ERROR', '{"error":{"code":429}}')).toBe('429');
    expect(effectiveErrorCode('UNKNOWN_ERROR', 'socket hang up')).toBe('UNKNOWN_ERROR');
    expect(effectiveErrorCode('503', '{"code":"RATE_LIMIT_TIMEOUT"}')).toBe('503');
  });

  it('classifies per author; a branch without events is missing; foreign authors are ignored', () => {
    const timeout = new RateLimitTimeout('gemini', 'budget', 20);
    const events = [
      answer('a'),
      failure('b', 'UNKNOWN_ERROR', timeout.message),
      failure('c', '429', 'Quota exceeded'),
      answer('guard_d'),
      answer('user'),
    ];
    expect(collectBranchOutcomes(events, ['a', 'b', 'c', 'd']).map((r) => [r.name, r.outcome])).toEqual([
      ['a', 'ok'],
      ['b', 'timeout'],
      ['c', 'rate_limited'],
      ['d', 'missing'],
    ]);
  });

  it('an error after a final answer of the same agent wins; partial chunks are not answers', () => {
    const partial = answer('a', 'par');
    partial.partial = true;
    expect(collectBranchOutcomes([partial], ['a'])[0].outcome).toBe('missing');
    expect(collectBranchOutcomes([answer('a'), failure('a', '500')], ['a'])[0].outcome).toBe('error');
    expect(collectBranchOutcomes([failure('a', '500'), answer('a')], ['a'])[0].outcome).toBe('error');
  });

  it('property: one result per branch, in branch order; an error event always shows', () => {
    const branch = fc.constantFrom('a', 'b', 'c');
    const eventArb = fc.oneof(
      branch.map((author) => ({ author, code: undefined as string | undefined })),
      fc.record({ author: branch, code: fc.constantFrom('RATE_LIMIT_TIMEOUT', 'RATE_LIMITED', '429', '500') }),
    );
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 12 }), (specs) => {
        const events = specs.map((s) => (s.code ? failure(s.author, s.code) : answer(s.author)));
        const results = collectBranchOutcomes(events, ['a', 'b', 'c']);
        expect(results.map((r) => r.name)).toEqual(['a', 'b', 'c']);
        for (const r of results) {
          const mine = specs.filter((s) => s.author === r.name);
          const errors = mine.filter((s) => s.code);
          if (errors.length > 0) expect(r.outcome).toBe(outcomeOfErrorCode(errors.at(-1)!.code!));
          else if (mine.length > 0) expect(r.outcome).toBe('ok');
          else expect(r.outcome).toBe('missing');
        }
      }),
    );
  });
});
