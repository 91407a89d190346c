// A request on a tree of two models waits at its slowest door first: a share taken before a
// wait at another limiter would hold its window room idle for the whole wait (contract_review:
// its flash share waited with the request at the pro door, and flash, not pro, bounded it).
import { InMemoryRunner, LlmAgent, LogLevel, SequentialAgent, setLogLevel } from '@google/adk';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { BudgetTicket, ReserveOptions } from '../../instrumentation/budget/budget.ts';
import { estimateInputTokens } from '../../instrumentation/estimator.ts';
import { RateLimitedLlm, RequestAdmission, TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm } from '../../instrumentation/testing.ts';
import { delay } from './helpers.ts';

setLogLevel(LogLevel.ERROR);

/** A token budget that notes when each reservation of `least` tokens or more (a request's share, not a call's top-up) was granted. */
class GrantLog extends TokenBudget {
  readonly granted: number[] = [];
  readonly #least: number;
  #inReserve = false;

  constructor(tokensPerMinute: number, least: number) {
    super(tokensPerMinute, { countedTokens: 'input', windowMs: 1_000 });
    this.#least = least;
  }

  override tryReserve(tokens: number, options?: Pick<ReserveOptions, 'windowAtUse' | 'useSchedule'>): BudgetTicket | undefined {
    const ticket = super.tryReserve(tokens, options);
    if (ticket && !this.#inReserve && tokens >= this.#least) this.granted.push(performance.now());
    return ticket;
  }

  override async reserve(tokens: number, options?: ReserveOptions): Promise<BudgetTicket> {
    this.#inReserve = true;
    let waited: Promise<BudgetTicket>;
    try {
      waited = super.reserve(tokens, options);
    } finally {
      this.#inReserve = false;
    }
    const ticket = await waited;
    if (tokens >= this.#least) this.granted.push(performance.now());
    return ticket;
  }
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
    const flashBudget = new GrantLog(1_000_000, 300);
    const proBudget = new GrantLog(600, 300);
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
    const [, proGranted] = proBudget.granted;
    const [, flashGranted] = flashBudget.granted;
    expect(proGranted - arrived).toBeGreaterThan(100);
    // Funded in name order, flash was granted on arrival and its room stood idle while the request waited at pro.
    expect(flashGranted).toBeGreaterThanOrEqual(proGranted);
    flash.close();
    pro.close();
  });
});
