// The wrapper inside real ADK agent trees: one instance shared by every agent.
import {
  AgentTool,
  type Event,
  InMemoryRunner,
  LlmAgent,
  LogLevel,
  ParallelAgent,
  SequentialAgent,
  setLogLevel,
} from '@google/adk';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { limiterMetrics, RateLimitedLlm, TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm, type Script, textResponse } from '../../instrumentation/testing.ts';
import { delay, metricValue } from './helpers.ts';

setLogLevel(LogLevel.ERROR);

function agentOf(call: { request: { config?: { labels?: Record<string, string> } } }): string | undefined {
  return call.request.config?.labels?.adk_agent_name;
}

function reviewTree(model: RateLimitedLlm) {
  const reviewers = [1, 2, 3, 4].map(
    (i) => new LlmAgent({ name: `reviewer_${i}`, model, instruction: `Review aspect ${i}.`, outputKey: `review_${i}` }),
  );
  return new SequentialAgent({
    name: 'review',
    subAgents: [
      new ParallelAgent({ name: 'reviewers', subAgents: reviewers }),
      new LlmAgent({
        name: 'synthesizer',
        model,
        instruction: 'Combine {review_1?} {review_2?} {review_3?} {review_4?}',
      }),
    ],
  });
}

async function run(agent: LlmAgent | SequentialAgent, text: string): Promise<Event[]> {
  const runner = new InMemoryRunner({ agent, appName: 'test' });
  const events: Event[] = [];
  for await (const ev of runner.runEphemeral({ userId: 'u', newMessage: { role: 'user', parts: [{ text }] } })) {
    events.push(ev);
  }
  return events;
}

function wrapper(script: Script, maxConcurrent: number, extra: { maxWaitMs?: number } = {}) {
  const registry = new Registry();
  const delegate = new FakeLlm(script);
  const budget = new TokenBudget(1_000_000, { countedTokens: 'total' });
  const llm = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent, budget, estimatedTokens: 1000, registry, ...extra });
  return { registry, delegate, budget, llm };
}

describe('ParallelAgent of 4 reviewers + synthesizer sharing one wrapper', () => {
  it('makes 5 calls, never more than maxConcurrent (2) in flight, agent names in the metrics', async () => {
    const w = wrapper(async function* (call) {
      await delay(30, call.signal);
      yield textResponse(`from ${agentOf(call)}`, 500);
    }, 2);
    const events = await run(reviewTree(w.llm), 'Please review.');
    expect(w.delegate.calls).toHaveLength(5);
    expect(w.delegate.maxInFlight).toBe(2);
    expect(w.llm.snapshot().permitsInUse).toBe(0);
    for (const agent of ['reviewer_1', 'reviewer_2', 'reviewer_3', 'reviewer_4', 'synthesizer']) {
      expect(await metricValue(w.registry, limiterMetrics.calls.name, { agent, outcome: 'ok' })).toBe(1);
    }
    const final = events.find((e) => e.author === 'synthesizer' && !e.partial);
    expect(final?.content?.parts?.[0].text).toBe('from synthesizer');
    // Tokens: 5 calls reserved 1000 each and reported 500 each.
    expect(await metricValue(w.registry, limiterMetrics.tokensActual.name, {})).toBe(2500);
  });

  it('a branch whose delegate throws leaves permits at the starting count; siblings finish', async () => {
    const w = wrapper(async function* (call) {
      await delay(10, call.signal);
      if (agentOf(call) === 'reviewer_2') throw new Error('provider exploded');
      yield textResponse('fine', 100);
    }, 2);
    const events = await run(reviewTree(w.llm), 'Please review.');
    expect(w.delegate.calls).toHaveLength(5);
    expect(w.llm.snapshot().permitsInUse).toBe(0);
    expect(events.find((e) => e.author === 'reviewer_2')?.errorCode).toBe('UNKNOWN_ERROR');
    expect(await metricValue(w.registry, limiterMetrics.calls.name, { agent: 'reviewer_2', outcome: 'error' })).toBe(1);
    expect(await metricValue(w.registry, limiterMetrics.calls.name, { outcome: 'ok' })).toBe(4);
  });

  it('a branch that waits too long surfaces as an ADK error event with errorCode RATE_LIMIT_TIMEOUT', async () => {
    const w = wrapper(
      async function* (call) {
        await delay(60, call.signal);
        yield textResponse('slow', 100);
      },
      1,
      { maxWaitMs: 90 },
    );
    const events = await run(reviewTree(w.llm), 'Please review.');
    const timedOut = events.filter((e) => e.errorCode === 'RATE_LIMIT_TIMEOUT');
    expect(timedOut.length).toBeGreaterThanOrEqual(1);
    expect(timedOut[0].errorMessage).toMatch(/no permit within/);
    expect(w.llm.snapshot().permitsInUse).toBe(0);
    expect(await metricValue(w.registry, limiterMetrics.timeouts.name, { reason: 'permit' })).toBe(timedOut.length);
  });
});

describe('AgentTool nested agent on the same wrapper', () => {
  it('completes with maxConcurrent 1: the permit is held per model call, not across the tool call', async () => {
    const w = wrapper(async function* (call) {
      await delay(5, call.signal);
      const agent = agentOf(call);
      if (agent === 'helper') {
        yield textResponse('helper says 42', 50);
        return;
      }
      const sawToolResult = call.request.contents.some((c) => c.parts?.some((p) => p.functionResponse));
      if (!sawToolResult) {
        yield {
          content: { role: 'model', parts: [{ functionCall: { name: 'helper', args: { request: 'what is the answer?' } } }] },
          usageMetadata: { totalTokenCount: 30 },
        };
        return;
      }
      yield textResponse('the answer is 42', 60);
    }, 1);
    const helper = new LlmAgent({ name: 'helper', model: w.llm, description: 'Answers questions.', instruction: 'Answer.' });
    const orchestrator = new LlmAgent({
      name: 'orchestrator',
      model: w.llm,
      instruction: 'Use the helper tool.',
      tools: [new AgentTool({ agent: helper })],
    });
    const events = await Promise.race([
      run(orchestrator, 'question'),
      delay(5_000).then(() => {
        throw new Error('deadlock: nested agent never got a permit');
      }),
    ]);
    expect(w.delegate.calls.map(agentOf)).toEqual(['orchestrator', 'helper', 'orchestrator']);
    const final = events.filter((e) => e.author === 'orchestrator' && e.content?.parts?.[0]?.text).at(-1);
    expect(final?.content?.parts?.[0].text).toBe('the answer is 42');
    expect(w.delegate.maxInFlight).toBe(1);
    expect(w.llm.snapshot().permitsInUse).toBe(0);
  });
});
