// Request admission on real ADK trees: one admission per request, funded whole, shed whole
// before any model call, calls in the order of their request's admission, settled at the end.
import {
  AgentTool,
  type BaseAgent,
  type Event,
  InMemoryRunner,
  LlmAgent,
  LogLevel,
  LoopAgent,
  ParallelAgent,
  SequentialAgent,
  setLogLevel,
} from '@google/adk';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { estimateInputTokens } from '../../instrumentation/estimator.ts';
import { limiterMetrics, RateLimitedLlm, RequestAdmission, RequestShed, TokenBudget } from '../../instrumentation/index.ts';
import { type FakeCall, FakeLlm, textResponse } from '../../instrumentation/testing.ts';
import { delay, metricValue } from './helpers.ts';

setLogLevel(LogLevel.ERROR);

const TOKENS_PER_CALL = 1000;

function agentOf(call: FakeCall): string {
  return String(call.request.config?.labels?.adk_agent_name ?? 'unknown');
}

/** The user's message of the call's request: the tests tag each request with it. */
function tagOf(call: FakeCall): string {
  const first = call.request.contents.find((c) => c.role === 'user');
  return first?.parts?.[0]?.text ?? '';
}

function reviewTree(model: RateLimitedLlm, name = 'review'): SequentialAgent {
  const reviewers = [1, 2, 3, 4].map(
    (i) => new LlmAgent({ name: `reviewer_${i}`, model, instruction: `Review aspect ${i}.`, outputKey: `review_${i}` }),
  );
  return new SequentialAgent({
    name,
    subAgents: [
      new ParallelAgent({ name: 'reviewers', subAgents: reviewers }),
      new LlmAgent({ name: 'synthesizer', model, instruction: 'Combine {review_1?} {review_2?} {review_3?} {review_4?}' }),
    ],
  });
}

interface Setup {
  readonly registry: Registry;
  readonly delegate: FakeLlm;
  readonly budget: TokenBudget;
  readonly llm: RateLimitedLlm;
  readonly started: { agent: string; tag: string }[];
}

function setup(options: { permits: number; tokensPerMinute: number; callMs?: number; maxWaitMs?: number; fail?: (call: FakeCall) => boolean }): Setup {
  const registry = new Registry();
  const started: { agent: string; tag: string }[] = [];
  const delegate = new FakeLlm(async function* (call) {
    started.push({ agent: agentOf(call), tag: tagOf(call) });
    await delay(options.callMs ?? 10, call.signal);
    if (options.fail?.(call)) throw new Error('provider exploded');
    yield textResponse(`from ${agentOf(call)}`, TOKENS_PER_CALL);
  });
  const budget = new TokenBudget(options.tokensPerMinute, { countedTokens: 'total' });
  // The calls' time is stated: a cold limiter plans with it (the 20 s default would give the tests' 1 s deadlines 80 s).
  const llm = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent: options.permits, budget, registry, maxWaitMs: options.maxWaitMs ?? 5_000, expectedCallMs: options.callMs ?? 10 });
  return { registry, delegate, budget, llm, started };
}

async function runRequest(admission: RequestAdmission, root: BaseAgent, tag: string, lane?: string): Promise<Event[]> {
  const runner = new InMemoryRunner({ agent: root, appName: 'test' });
  const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
  const events: Event[] = [];
  const params = { userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: tag }] } };
  for await (const event of admission.runAsync(runner, params, { lane })) events.push(event);
  return events;
}

describe('RequestAdmission', () => {
  it('funds a whole request at the door and gives back what it did not use when it ends', async () => {
    const s = setup({ permits: 10, tokensPerMinute: 600_000 });
    const tree = reviewTree(s.llm);
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    await runRequest(admission, tree, 'warm-up'); // learns each agent's 1000 tokens per call, less its message's
    let levelBefore = 0;
    let levelInside = 0;
    const runner = new InMemoryRunner({ agent: tree, appName: 'test' });
    const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
    let elapsedMs = 0;
    const before = performance.now();
    levelBefore = s.budget.available;
    const message = { role: 'user', parts: [{ text: 'r2' }] };
    await admission.run(
      tree,
      async () => {
      levelInside = s.budget.available;
      elapsedMs = performance.now() - before;
      for await (const _ of runner.runAsync({ userId: 'u', sessionId: session.id, newMessage: message })) {
        // drain
      }
      },
      { message },
    );
    // 5 calls, each at what its agent used beyond the warm-up's message plus this request's,
    // reserved at once; the bucket refills 10 tokens per ms meanwhile, so the level fell by
    // that less at most what refilled while the door admitted it.
    const funded = 5 * (TOKENS_PER_CALL - estimateInputTokens({ contents: [{ parts: [{ text: 'warm-up' }] }] }) + estimateInputTokens({ contents: [message] }));
    expect(levelBefore - levelInside).toBeGreaterThanOrEqual(funded - Math.ceil(10 * elapsedMs) - 1);
    expect(levelBefore - levelInside).toBeLessThanOrEqual(funded);
    expect(await metricValue(s.registry, limiterMetrics.requests.name, { outcome: 'admitted' })).toBe(2);
    expect(await metricValue(s.registry, limiterMetrics.requests.name, { outcome: 'completed' })).toBe(2);
    expect(await metricValue(s.registry, limiterMetrics.wastedTokens.name, {})).toBe(0);
    expect(s.llm.snapshot().permitsInUse).toBe(0);
  });

  it('a burst at a cold limiter: one request learns call by call, the others wait at the door and are funded whole once a call taught a cost', async () => {
    const s = setup({ permits: 10, tokensPerMinute: 600_000, callMs: 30 });
    const tree = reviewTree(s.llm);
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    const burst = [1, 2, 3, 4, 5, 6].map((i) => runRequest(admission, tree, `burst-${i}`));
    await delay(5);
    // One learner's reviewers started; the other five wait at the door, no call made yet.
    expect(new Set(s.started.map((c) => c.tag))).toEqual(new Set(['burst-1']));
    expect(admission.waiting).toBe(5);
    await Promise.all(burst);
    expect(await metricValue(s.registry, limiterMetrics.requests.name, { outcome: 'admitted' })).toBe(6);
    expect(await metricValue(s.registry, limiterMetrics.requests.name, { outcome: 'completed' })).toBe(6);
    // The learner ran call by call; the five after it were funded whole: 5 reservations, then settled.
    expect(s.started.filter((c) => c.tag === 'burst-1')).toHaveLength(5);
    expect(s.started).toHaveLength(30);
    expect(s.llm.snapshot().permitsInUse).toBe(0);
  });

  it('a learner that ends without teaching a cost (its calls failed) hands the turn to the next request', async () => {
    const s = setup({ permits: 10, tokensPerMinute: 600_000, callMs: 10, fail: (call) => tagOf(call) === 'fails' });
    const tree = reviewTree(s.llm);
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    const failing = runRequest(admission, tree, 'fails').catch((error: unknown) => error);
    const next = runRequest(admission, tree, 'next');
    await failing;
    await next;
    expect(s.started.some((c) => c.tag === 'next')).toBe(true);
    expect(await metricValue(s.registry, limiterMetrics.requests.name, { outcome: 'completed' })).toBe(1);
    expect(admission.waiting).toBe(0);
  });

  it('sheds a request it cannot fund before its deadline at once, before any model call, with a retry-after hint', async () => {
    // 12,000 tokens a minute: the warm-up spends 5,000, the next request takes 5,000, and a third must wait ~15 s.
    const s = setup({ permits: 10, tokensPerMinute: 12_000 });
    const tree = reviewTree(s.llm);
    const admission = new RequestAdmission({ requestDeadlineMs: 2_000 });
    await runRequest(admission, tree, 'warm-up');
    const second = runRequest(admission, tree, 'second');
    const callsBefore = () => s.delegate.calls.length;
    await delay(1);
    const before = callsBefore();
    const shed = await runRequest(admission, tree, 'third').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(shed).toBeInstanceOf(RequestShed);
    expect((shed as RequestShed).reason).toBe('deadline');
    expect((shed as RequestShed).retryAfterMs).toBeGreaterThan(2_000);
    expect(JSON.parse((shed as RequestShed).message).code).toBe('REQUEST_SHED');
    await second;
    expect(s.started.filter((c) => c.tag === 'third')).toHaveLength(0);
    expect(s.delegate.calls.length - before).toBeLessThanOrEqual(5);
    expect(await metricValue(s.registry, limiterMetrics.requests.name, { outcome: 'shed' })).toBe(1);
    const waits = await s.registry.getSingleMetric(limiterMetrics.requestAdmission.name)?.get();
    const shedCount = waits?.values.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels.outcome === 'shed');
    expect(shedCount?.value).toBe(1);
  });

  it("puts an admitted request's calls before a newer request's queued calls", async () => {
    const s = setup({ permits: 2, tokensPerMinute: 600_000, callMs: 20 });
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    await runRequest(admission, reviewTree(s.llm), 'warm-up');
    s.started.length = 0;
    const a = runRequest(admission, reviewTree(s.llm, 'review_a'), 'A');
    await delay(2);
    const b = runRequest(admission, reviewTree(s.llm, 'review_b'), 'B');
    await Promise.all([a, b]);
    const order = s.started.map((c) => `${c.tag}:${c.agent}`);
    // A's synthesizer may wait for a permit B holds, but never behind B's queued reviewers.
    const synthA = order.indexOf('A:synthesizer');
    expect(synthA).toBeGreaterThan(-1);
    const bStarted = order.filter((o) => o.startsWith('B:reviewer')).map((o) => order.indexOf(o));
    expect(bStarted.filter((i) => i > synthA).length).toBeGreaterThanOrEqual(1);
    expect(order.slice(0, 4).every((o) => o.startsWith('A:'))).toBe(true);
  });

  it('counts a request with a failed branch as partial and its tokens as wasted', async () => {
    let failing = false;
    const s = setup({ permits: 10, tokensPerMinute: 600_000, fail: (call) => failing && agentOf(call) === 'reviewer_2' });
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    const tree = reviewTree(s.llm);
    await runRequest(admission, tree, 'warm-up');
    failing = true;
    await runRequest(admission, tree, 'broken');
    expect(await metricValue(s.registry, limiterMetrics.requests.name, { outcome: 'partial' })).toBe(1);
    // Four calls reported 1000 tokens; the failed one counted its reservation.
    expect(await metricValue(s.registry, limiterMetrics.wastedTokens.name, {})).toBe(5 * TOKENS_PER_CALL);
  });

  it('runs an AgentTool sub-agent on the same model inside its request, with one permit, without deadlock', async () => {
    const registry = new Registry();
    const delegate = new FakeLlm(async function* (call) {
      await delay(5, call.signal);
      if (agentOf(call) === 'helper') {
        yield textResponse('helper says 42', 100);
        return;
      }
      const sawToolResult = call.request.contents.some((c) => c.parts?.some((p) => p.functionResponse));
      if (!sawToolResult) {
        yield {
          content: { role: 'model', parts: [{ functionCall: { name: 'helper', args: { request: 'what is the answer?' } } }] },
          usageMetadata: { totalTokenCount: 100 },
        };
        return;
      }
      yield textResponse('the answer is 42', 100);
    });
    const budget = new TokenBudget(60_000, { countedTokens: 'total' });
    const llm = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent: 1, budget, registry });
    const helper = new LlmAgent({ name: 'helper', model: llm, description: 'Answers questions.', instruction: 'Answer.' });
    const root = new LlmAgent({ name: 'orchestrator', model: llm, instruction: 'Use the helper.', tools: [new AgentTool({ agent: helper })] });
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    for (const tag of ['warm-up', 'funded']) {
      await Promise.race([
        runRequest(admission, root, tag),
        delay(5_000).then(() => {
          throw new Error('deadlock: the nested agent never ran');
        }),
      ]);
    }
    // The sub-run is part of its request: admitted once per request, not once per invocation.
    expect(await metricValue(registry, limiterMetrics.requests.name, { outcome: 'admitted' })).toBe(2);
    expect(await metricValue(registry, limiterMetrics.requests.name, { outcome: 'completed' })).toBe(2);
    expect(delegate.calls.map(agentOf)).toEqual(['orchestrator', 'helper', 'orchestrator', 'orchestrator', 'helper', 'orchestrator']);
    expect(llm.snapshot().permitsInUse).toBe(0);
    // The funded request waited for no budget: 3 calls x 100 tokens were reserved at the door and settled.
    expect(budget.waiting).toBe(0);
  });

  it('admits a batch-lane request the budget can fund now', async () => {
    const s = setup({ permits: 10, tokensPerMinute: 600_000 });
    const tree = reviewTree(s.llm);
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    await runRequest(admission, tree, 'warm-up');
    await runRequest(admission, tree, 'batch', 'batch');
    expect(s.started.filter((c) => c.tag === 'batch')).toHaveLength(5);
  });

  it('sheds a batch-lane request at once while the budget cannot fund it now', async () => {
    const s = setup({ permits: 10, tokensPerMinute: 12_000 });
    const tree = reviewTree(s.llm);
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    await runRequest(admission, tree, 'warm-up');
    await runRequest(admission, tree, 'interactive');
    const shed = await runRequest(admission, tree, 'batch', 'batch').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(shed).toBeInstanceOf(RequestShed);
    expect((shed as RequestShed).reason).toBe('lane');
    expect(s.started.filter((c) => c.tag === 'batch')).toHaveLength(0);
  });

  it('an unset deadline is 60 s, or twice the critical path of a deeper tree (capped at 600 s); a set one is kept unless shorter than the chain with its margin', () => {
    const auto = new RequestAdmission();
    expect(auto.deadlineFor(2, 8_000)).toBe(60_000);
    expect(auto.deadlineFor(6, 8_000)).toBe(96_000);
    expect(auto.deadlineFor(100, 8_000)).toBe(600_000);
    const set = new RequestAdmission({ requestDeadlineMs: 30_000, log: () => {} });
    expect(set.deadlineFor(2, 8_000)).toBe(30_000);
    // 8 calls of 8 s: a 30 s deadline is shorter than the chain (64 s); the request gets twice the chain.
    expect(set.deadlineFor(8, 8_000)).toBe(128_000);
  });

  it("a cold limiter's deadline knows the tree: the expected call time (a prior, else the default) before any call was measured", () => {
    const deep = new SequentialAgent({
      name: 'deep',
      subAgents: Array.from(
        { length: 8 },
        (_, i) => new LlmAgent({ name: `step_${i}`, model: new RateLimitedLlm({ delegate: new FakeLlm(async function* () {}), name: 'cold', maxConcurrent: 1, registry: new Registry() }), instruction: 'Step.' }),
      ),
    });
    const admission = new RequestAdmission({ requestDeadlineMs: 60_000, log: () => {} });
    // 8 sequential calls at the stated default of 20 s: a 160 s chain, before any call ran.
    expect(admission.chainMs(deep)).toBe(160_000);
    const told = new RateLimitedLlm({ delegate: new FakeLlm(async function* () {}), name: 'told', maxConcurrent: 1, expectedCallMs: 8_000, registry: new Registry() });
    const toldTree = new SequentialAgent({ name: 'told', subAgents: Array.from({ length: 8 }, (_, i) => new LlmAgent({ name: `s_${i}`, model: told, instruction: 'Step.' })) });
    expect(admission.chainMs(toldTree)).toBe(64_000);
  });

  it('refuses a request deadline outside its bounds, naming the field', () => {
    expect(() => new RequestAdmission({ requestDeadlineMs: 10 })).toThrow(/requestDeadlineMs/);
    expect(() => new RequestAdmission({ requestDeadlineMs: 601_000 })).toThrow(/requestDeadlineMs/);
  });
});

/** A random tree of LlmAgents on one model: sequences, fan-outs and bounded loops. */
type Shape = { kind: 'llm' } | { kind: 'seq' | 'par'; children: Shape[] } | { kind: 'loop'; times: number; body: Shape };

const shapeArb: fc.Arbitrary<Shape> = fc.letrec<{ shape: Shape }>((tie) => ({
  shape: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant<Shape>({ kind: 'llm' }),
    fc.record({ kind: fc.constantFrom<'seq' | 'par'>('seq', 'par'), children: fc.array(tie('shape'), { minLength: 1, maxLength: 4 }) }),
    fc.record({ kind: fc.constant<'loop'>('loop'), times: fc.integer({ min: 1, max: 2 }), body: tie('shape') }),
  ),
})).shape;

function buildTree(shape: Shape, model: RateLimitedLlm, names: { next: number }): BaseAgent {
  const name = `n${names.next++}`;
  switch (shape.kind) {
    case 'llm':
      return new LlmAgent({ name, model, instruction: 'Work.' });
    case 'seq':
      return new SequentialAgent({ name, subAgents: shape.children.map((c) => buildTree(c, model, names)) });
    case 'par':
      return new ParallelAgent({ name, subAgents: shape.children.map((c) => buildTree(c, model, names)) });
    case 'loop':
      return new LoopAgent({ name, maxIterations: shape.times, subAgents: [buildTree(shape.body, model, names)] });
  }
}

describe('RequestAdmission properties', () => {
  it('never deadlocks, returns every permit, sheds only requests that made no call, and keeps admissions within the budget plus debt', async () => {
    await fc.assert(
      fc.asyncProperty(
        shapeArb,
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 3, max: 40 }),
        async (shape, permits, concurrent, budgetCalls) => {
          // A short maxWait: the warm-up learns call by call on a budget of a few calls a minute, each call waiting at most that long.
          const s = setup({ permits, tokensPerMinute: budgetCalls * TOKENS_PER_CALL, callMs: 2, maxWaitMs: 500 });
          const root = new SequentialAgent({ name: 'root', subAgents: [buildTree(shape, s.llm, { next: 0 })] });
          const admission = new RequestAdmission({ requestDeadlineMs: 1_000 });
          await runRequest(admission, root, 'warm-up').catch(() => undefined);
          const outcomes = await Promise.race([
            Promise.allSettled(Array.from({ length: concurrent }, (_, i) => runRequest(admission, root, `r${i}`))),
            delay(10_000).then(() => {
              throw new Error('deadlock');
            }),
          ]);
          outcomes.forEach((outcome, i) => {
            if (outcome.status === 'rejected') {
              expect(outcome.reason).toBeInstanceOf(RequestShed);
              expect(s.started.filter((c) => c.tag === `r${i}`)).toHaveLength(0);
            }
          });
          expect(s.llm.snapshot().permitsInUse).toBe(0);
          expect(s.budget.waiting).toBe(0);
          // Every call reported exactly its reservation, so no debt: the window never held more than one window's tokens.
          expect(s.budget.windowTokens ?? 0).toBeLessThanOrEqual(s.budget.capacity + 1e-6);
          expect(s.budget.available).toBeGreaterThanOrEqual(-1e-6);
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);
});
