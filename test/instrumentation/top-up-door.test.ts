// A funded call larger than its request's share takes the rest from the budget before it is
// sent, ahead of the requests at the door. While it waits for room now, a request at the door
// whose calls start later is taken if that leaves the top-up's time as it was: in strict order
// the door stood still behind it, with room in the window.
import type { LlmRequest } from '@google/adk';
import { describe, expect, it } from 'vitest';
import { AdmissionControl } from '../../instrumentation/admission/call-admission.ts';
import { FundedShare } from '../../instrumentation/admission/funded-share.ts';
import { TokenBudget } from '../../instrumentation/budget/token-budget.ts';
import type { CallWatch } from '../../instrumentation/call-observers.ts';
import { flushMicrotasks, ManualClock } from '../../instrumentation/clock.ts';
import { estimateInputTokens, UsageEstimator } from '../../instrumentation/estimator.ts';
import { FairSemaphore } from '../../instrumentation/semaphore.ts';

describe('a top-up and the door', () => {
  it('a call waiting for its top-up holds back no request at the door that fits without delaying it', async () => {
    const clock = new ManualClock(0);
    const budget = new TokenBudget(1_000, { clock, countedTokens: 'input' });
    const admission = new AdmissionControl({ name: 'pro', semaphore: new FairSemaphore(4, { clock }), budget, estimator: new UsageEstimator(), clock, maxWaiting: undefined });
    // A request funded 100 tokens for its writer; 850 more fill the window until 60 s.
    const shareTicket = budget.tryReserve(100, { windowAtUse: true, useSchedule: [{ afterMs: 0, tokens: 100 }] });
    expect(shareTicket).toBeDefined();
    expect(budget.tryReserve(850)).toBeDefined();
    await clock.advance(50_000);
    // The writer's prompt is larger than its share: the rest (about 200) does not fit before 60 s.
    const request = { contents: [{ role: 'user', parts: [{ text: 'draft '.repeat(200) }] }] } as unknown as LlmRequest;
    const prompt = estimateInputTokens(request);
    expect(prompt).toBeGreaterThan(150);
    const share = new FundedShare(budget, shareTicket as NonNullable<typeof shareTicket>, new Map([['writer', 100]]));
    const call = admission.admit({
      request,
      agent: 'writer',
      lane: undefined,
      start: clock.now(),
      deadline: clock.now() + 120_000,
      deadlineIsRequest: true,
      signal: new AbortController().signal,
      watch: { waiting() {} } as unknown as CallWatch,
      priority: 0,
      funding: { kind: 'share', share, tokens: 100 },
    });
    expect(call).toBeInstanceOf(Promise);
    /** Whether a request at the door, whose `tokens` are used `afterMs` from now, is taken at once. */
    const takenAtOnce = async (tokens: number, afterMs: number, priority: number) => {
      let granted = false;
      void budget.reserve(tokens, { windowAtUse: true, useSchedule: [{ afterMs, tokens }], deadline: clock.now() + 300_000, priority }).then(() => {
        granted = true;
      });
      await flushMicrotasks();
      return granted;
    };
    // 300 used 20 s from now, after the 850 leave: it fits beside the top-up.
    expect(await takenAtOnce(300, 20_000, 1)).toBe(true);
    // 900 used 15 s from now would leave no room for the top-up then: it waits.
    expect(await takenAtOnce(900, 15_000, 2)).toBe(false);
    // The top-up is taken once the 850 left.
    await clock.advance(10_100);
    const admitted = await call;
    expect(admitted.kind).toBe('admitted');
    expect(share.toppedUp).toBe(prompt - 100);
  });
});
