// The invariant of request admission, on random trees: an admitted request ends partial only
// when the provider fails one of its calls, never because the limiter ran out of time or
// budget for it. Real ADK trees (sequences, fan-outs, bounded loops, AgentTools, nested up to
// depth 10) on one RateLimitedLlm, a fake provider whose calls take random times, and a manual
// clock, so a call time of minutes costs no wall time. The limiters start cold: with an
// expected cost per call (a cold burst funded from the estimate) or without (one learner).
import {
  AgentTool,
  type BaseAgent,
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
import { sleep } from '../../instrumentation/clock.ts';
import { limiterMetrics, RateLimitedLlm, RequestAdmission, RequestShed, TokenBudget } from '../../instrumentation/index.ts';
import { type FakeCall, FakeLlm, ManualClock, textResponse } from '../../instrumentation/testing.ts';
import { metricValue } from './helpers.ts';

setLogLevel(LogLevel.ERROR);

const TOKENS_PER_CALL = 1000;

type Shape =
  | { kind: 'llm' }
  | { kind: 'seq' | 'par'; children: Shape[] }
  | { kind: 'loop'; times: number; body: Shape }
  | { kind: 'tool'; inner: Shape };

const shapeArb: fc.Arbitrary<Shape> = fc.letrec<{ shape: Shape }>((tie) => ({
  shape: fc.oneof(
    { depthSize: 'small', withCrossShrink: true, maxDepth: 10 },
    fc.constant<Shape>({ kind: 'llm' }),
    fc.record({ kind: fc.constantFrom<'seq' | 'par'>('seq', 'par'), children: fc.array(tie('shape'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ kind: fc.constant<'loop'>('loop'), times: fc.integer({ min: 1, max: 2 }), body: tie('shape') }),
    fc.record({ kind: fc.constant<'tool'>('tool'), inner: tie('shape') }),
  ),
})).shape;

/** Tool callers, by agent name: the agent tool each one calls on its first turn. */
type ToolCalls = Map<string, string>;

function buildTree(shape: Shape, model: RateLimitedLlm, names: { next: number }, tools: ToolCalls): BaseAgent {
  const name = `n${names.next++}`;
  switch (shape.kind) {
    case 'llm':
      return new LlmAgent({ name, model, instruction: 'Work.' });
    case 'seq':
      return new SequentialAgent({ name, subAgents: shape.children.map((c) => buildTree(c, model, names, tools)) });
    case 'par':
      return new ParallelAgent({ name, subAgents: shape.children.map((c) => buildTree(c, model, names, tools)) });
    case 'loop':
      return new LoopAgent({ name, maxIterations: shape.times, subAgents: [buildTree(shape.body, model, names, tools)] });
    case 'tool': {
      const inner = buildTree(shape.inner, model, names, tools);
      tools.set(name, inner.name);
      return new LlmAgent({ name, model, instruction: 'Use the tool.', tools: [new AgentTool({ agent: inner })] });
    }
  }
}

function agentOf(call: FakeCall): string {
  return String(call.request.config?.labels?.adk_agent_name ?? 'unknown');
}

/** Runs `work` while moving the manual clock on; fails when nothing ends within `limitMs` of clock time. */
async function drive<T>(clock: ManualClock, work: Promise<T>, limitMs: number): Promise<T> {
  let done = false;
  const result = work.finally(() => {
    done = true;
  });
  const start = clock.now();
  while (!done) {
    if (clock.now() - start > limitMs) throw new Error(`still running after ${limitMs} ms of clock time: a deadlock`);
    await clock.advance(25);
  }
  return result;
}

describe('whole requests on random trees', () => {
  it('an admitted request is never cut by the limiter: every request ends whole or is shed before any call', async () => {
    await fc.assert(
      fc.asyncProperty(
        shapeArb,
        fc.record({
          permits: fc.integer({ min: 1, max: 4 }),
          concurrent: fc.integer({ min: 1, max: 6 }),
          budgetRequests: fc.integer({ min: 1, max: 4 }),
          callTimes: fc.array(fc.integer({ min: 1, max: 20_000 }), { minLength: 1, maxLength: 16 }),
          expected: fc.boolean(),
          deadlineMs: fc.option(fc.integer({ min: 1_000, max: 120_000 }), { nil: undefined }),
          // Input alone counted: calls draw their own prompts from their request's share (funded at the mean).
          counted: fc.constantFrom<'total' | 'input'>('total', 'input'),
        }),
        async (shape, o) => {
          const clock = new ManualClock();
          const tools: ToolCalls = new Map();
          let nextTime = 0;
          const delegate = new FakeLlm(async function* (call) {
            await sleep(clock, o.callTimes[nextTime++ % o.callTimes.length], call.signal);
            const agent = agentOf(call);
            const tool = tools.get(agent);
            const sawResult = call.request.contents.some((c) => c.parts?.some((p) => p.functionResponse));
            if (tool && !sawResult) {
              yield { content: { role: 'model', parts: [{ functionCall: { name: tool, args: { request: 'go' } } }] }, usageMetadata: { totalTokenCount: TOKENS_PER_CALL } };
              return;
            }
            yield textResponse(`from ${agent}`, TOKENS_PER_CALL);
          });
          const registry = new Registry();
          // The budget funds budgetRequests whole requests a window.
          const budget = new TokenBudget(o.budgetRequests * TOKENS_PER_CALL * countCalls(shape), { countedTokens: o.counted, clock });
          const model = new RateLimitedLlm({
            delegate,
            name: 'gemini',
            // Permits for every request's widest step at once: a local budget's door counts tokens,
            // not permits, so a request admitted past what the permits serve in time can still be cut.
            maxConcurrent: o.permits * widthOf(shape),
            registry,
            clock,
            budget,
            expectedTokensPerCall: o.expected ? TOKENS_PER_CALL : undefined,
            // A learner's calls, admitted one by one, reserve what a call uses (the default estimate adds 1,000 output tokens, beyond a budget of whole requests).
            estimatedTokens: TOKENS_PER_CALL,
          });
          const admission = new RequestAdmission({ requestDeadlineMs: o.deadlineMs, clock, log: () => {} });
          const tree = new SequentialAgent({ name: 'root', subAgents: [buildTree(shape, model, { next: 0 }, tools)] });
          const runner = new InMemoryRunner({ agent: tree, appName: 'test' });
          const one = async (i: number) => {
            const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
            const params = { userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: `r${i}` }] } };
            const errors: string[] = [];
            for await (const event of admission.runAsync(runner, params)) if (event.errorCode) errors.push(`${event.author}: ${event.errorCode}`);
            return errors;
          };
          const outcomes = await drive(clock, Promise.allSettled(Array.from({ length: Math.min(o.concurrent, o.permits) }, (_, i) => one(i))), 3_600_000);
          for (const outcome of outcomes) {
            if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(RequestShed);
            else expect(outcome.value).toEqual([]);
          }
          expect(await metricValue(registry, limiterMetrics.requests.name, { outcome: 'partial' })).toBe(0);
          expect(await metricValue(registry, limiterMetrics.timeouts.name, {})).toBe(0);
          expect(model.snapshot().permitsInUse).toBe(0);
          // Something was served: the first request always fits an idle budget.
          expect(outcomes.some((o) => o.status === 'fulfilled')).toBe(true);
          model.close();
        },
      ),
      { numRuns: 30 },
    );
  }, 300_000);
});

/** Most calls of one request of `shape` in flight at once (an AgentTool caller waits while its tool runs). */
function widthOf(shape: Shape): number {
  switch (shape.kind) {
    case 'llm':
      return 1;
    case 'seq':
      return Math.max(...shape.children.map(widthOf));
    case 'par':
      return shape.children.reduce((sum, c) => sum + widthOf(c), 0);
    case 'loop':
      return widthOf(shape.body);
    case 'tool':
      return widthOf(shape.inner);
  }
}

/** Model calls of one request of `shape` (an AgentTool caller: its call, the tool's calls, its call after). */
function countCalls(shape: Shape): number {
  switch (shape.kind) {
    case 'llm':
      return 1;
    case 'seq':
    case 'par':
      return 1 * shape.children.reduce((sum, c) => sum + countCalls(c), 0);
    case 'loop':
      return shape.times * countCalls(shape.body);
    case 'tool':
      return 2 + countCalls(shape.inner);
  }
}

describe('a cold learner whose first call hangs', () => {
  it('holds the others no longer than its bounded turn: then the next request learns', async () => {
    const clock = new ManualClock();
    const delegate = new FakeLlm(async function* (call) {
      // The very first call stalls (until its request is abandoned); the others take 100 ms.
      if (call.index === 0) await new Promise((_, reject) => call.signal?.addEventListener('abort', () => reject(call.signal?.reason)));
      await sleep(clock, 100, call.signal);
      yield textResponse(`from ${agentOf(call)}`, TOKENS_PER_CALL);
    });
    const model = new RateLimitedLlm({
      delegate,
      name: 'gemini',
      maxConcurrent: 4,
      registry: new Registry(),
      clock,
      budget: new TokenBudget(100 * TOKENS_PER_CALL, { countedTokens: 'total', clock }),
      expectedCallMs: 100,
      maxCallMs: 3_600_000,
    });
    const tree = new SequentialAgent({ name: 'root', subAgents: [new LlmAgent({ name: 'a', model, instruction: 'A.' }), new LlmAgent({ name: 'b', model, instruction: 'B.' })] });
    // Deadline 60 s; the turn: the chain of 2 calls at 100 ms with the door's margin, 300 ms.
    const admission = new RequestAdmission({ requestDeadlineMs: 60_000, clock, log: () => {} });
    const runner = new InMemoryRunner({ agent: tree, appName: 'test' });
    const stalled = new AbortController();
    const one = async (i: number, signal?: AbortSignal) => {
      const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
      const params = { userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: `r${i}` }] }, abortSignal: signal };
      for await (const _ of admission.runAsync(runner, params)) {
        // drain
      }
    };
    const learner = one(0, stalled.signal).catch(() => undefined);
    await clock.advance(10);
    const others = Promise.allSettled([1, 2, 3].map((i) => one(i)));
    // Before the turn ends the others wait at the door: only the stalled call was made.
    await clock.advance(200);
    expect(delegate.calls.length).toBe(1);
    // Past the turn (300 ms) the next request learns, and once it ends the rest are funded whole.
    await drive(clock, others, 60_000);
    expect(clock.now()).toBeLessThan(10_000);
    for (const outcome of await others) expect(outcome.status).toBe('fulfilled');
    stalled.abort(new Error('client left'));
    await drive(clock, learner, 60_000);
    model.close();
  }, 60_000);
});
