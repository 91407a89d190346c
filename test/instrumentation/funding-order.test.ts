// A request on a tree of two models waits at its slowest door first: a share taken before a
// wait at another limiter would hold its window room idle for the whole wait (contract_review:
// its flash share waited with the request at the pro door, and flash, not pro, bounded it).
import { InMemoryRunner, LlmAgent, LogLevel, SequentialAgent, setLogLevel } from '@google/adk';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { estimateInputTokens } from '../../instrumentation/estimator.ts';
import { RateLimitedLlm, RequestAdmission, type TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm } from '../../instrumentation/testing.ts';
import { delay } from './helpers.ts';
import { RecordingBudget } from './recording-budget.ts';

setLogLevel(LogLevel.ERROR);

/** When each share of `least` tokens or more (a request's, not a call's top-up) was granted. */
function sharesGrantedAt(budget: RecordingBudget, least: number): number[] {
  return budget.taken.flatMap((tokens, i) => (tokens >= least ? [budget.grantedAt[i]] : []));
}

function limiter(name: string, budget: TokenBudget, callMs: number): RateLimitedLlm {
  const delegate = new FakeLlm(async function* (call) {
    const input = estimateInputTokens(call.request);
    await delay(callMs, call.signal);
    yield { content: { role: 'model', parts: [{ text: 'done' }] }, usageMetadata: { promptTokenCount: input, candidatesTokenCount: 1, totalTokenCount: input + 1 } };
  });
  // Warm from the first request: each call is funded at no less than its message (about 400 tokens).
  return new RateLimitedLlm({ delegate, name, maxConcurrent: 8, budget, registry: new Registry(), expectedCallMs: callMs, expectedTokensPerCall: 100 });
}

describe('the funding order across limiters', () => {
  it('a request that must wait at one limiter takes its share of the other only once that wait is over', async () => {
    // "a-flash" sorts first by name and has room; "b-pro" holds one request per 1 s window.
    const flashBudget = new RecordingBudget(1_000_000, { countedTokens: 'input', windowMs: 1_000 });
    const proBudget = new RecordingBudget(600, { countedTokens: 'input', windowMs: 1_000 });
    const flash = limiter('a-flash', flashBudget, 20);
    const pro = limiter('b-pro', proBudget, 20);
    const tree = new SequentialAgent({
      name: 'pipeline',
      subAgents: [new LlmAgent({ name: 'draft', model: flash, instruction: 'Draft.' }), new LlmAgent({ name: 'review', model: pro, instruction: 'Review.' })],
    });
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    const runner = new InMemoryRunner({ agent: tree, appName: 'test' });
    const run = async () => {
      const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
      for await (const _ of admission.runAsync(runner, { userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: 'contract '.repeat(170) }] } })) {
        // drain
      }
    };
    await run();
    // The pro window holds the first request's tokens for its 1 s: the next request waits at the pro door.
    const arrived = performance.now();
    await run();
    const [, proGranted] = sharesGrantedAt(proBudget, 300);
    const [, flashGranted] = sharesGrantedAt(flashBudget, 300);
    expect(proGranted - arrived).toBeGreaterThan(100);
    // Funded in name order, flash was granted on arrival and its room stood idle while the request waited at pro.
    expect(flashGranted).toBeGreaterThanOrEqual(proGranted);
    flash.close();
    pro.close();
  });
});
