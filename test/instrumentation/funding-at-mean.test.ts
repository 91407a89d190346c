// A budget counting input tokens alone funds each agent's calls at their mean, and the calls
// of a request draw their own prompts from its whole share: the request reserves what it uses
// (as the plan counts it), not each agent's largest call, and takes nothing more from the budget.
import { AgentTool, InMemoryRunner, LlmAgent, LogLevel, LoopAgent, setLogLevel } from '@google/adk';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { estimateInputTokens } from '../../instrumentation/estimator.ts';
import { limiterMetrics, RateLimitedLlm, RequestAdmission } from '../../instrumentation/index.ts';
import { agentNameOf } from '../../instrumentation/rate-limited-llm.ts';
import { FakeLlm } from '../../instrumentation/testing.ts';
import { delay, metricValue } from './helpers.ts';
import { RecordingBudget } from './recording-budget.ts';

setLogLevel(LogLevel.ERROR);

describe('funding at the mean (input tokens counted)', () => {
  it("a loop's small first call leaves its tokens to the larger second: the request reserves the sum of the means and tops up nothing", async () => {
    const prompts: number[] = [];
    // The provider counts each prompt by the estimator's rule; the answer grows the second prompt.
    const delegate = new FakeLlm(async function* (call) {
      const input = estimateInputTokens(call.request);
      prompts.push(input);
      await delay(20, call.signal);
      yield { content: { role: 'model', parts: [{ text: 'x'.repeat(4_000) }] }, usageMetadata: { promptTokenCount: input, candidatesTokenCount: 10, totalTokenCount: input + 10 } };
    });
    const budget = new RecordingBudget(1_000_000, { countedTokens: 'input' });
    const registry = new Registry();
    const llm = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent: 4, budget, registry, expectedCallMs: 10 });
    const tree = new LoopAgent({ name: 'drafts', maxIterations: 2, subAgents: [new LlmAgent({ name: 'writer', model: llm, instruction: 'Improve the draft.' })] });
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    const runner = new InMemoryRunner({ agent: tree, appName: 'test' });
    const run = async (text: string) => {
      const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
      for await (const _ of admission.runAsync(runner, { userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text }] } })) {
        // drain
      }
    };
    await run('req1'); // the learner: its two calls teach the writer's cost, one by one
    const [small, large] = prompts;
    expect(large).toBeGreaterThan(small + 500);
    budget.taken.length = 0;
    prompts.length = 0;
    await run('req2'); // same-sized message: the same two prompts
    expect(prompts).toEqual([small, large]);
    // One reservation, at the door: two calls at the writer's mean, which is what they used.
    // Funded at the writer's largest call it was 2 x large; funded per call at the mean, the
    // second call took (large - small) / 2 more from the budget.
    expect(budget.taken).toHaveLength(1);
    expect(budget.taken[0]).toBeGreaterThanOrEqual(small + large - 1);
    expect(budget.taken[0]).toBeLessThanOrEqual(small + large + 1);
    expect(await metricValue(registry, limiterMetrics.requests.name, { outcome: 'completed' })).toBe(2);
    // The second iteration's start is learned apart from the first's: its tokens are held from then.
    expect(llm.callCost.startOffsetMs('writer', 1)).toBeGreaterThan(llm.callCost.startOffsetMs('writer', 0) ?? Number.POSITIVE_INFINITY);
    llm.close();
  });

  it('a request larger than its share takes only the rest from the budget, before the call is sent', async () => {
    const prompts: number[] = [];
    const delegate = new FakeLlm(async function* (call) {
      const input = estimateInputTokens(call.request);
      prompts.push(input);
      yield { content: { role: 'model', parts: [{ text: 'done' }] }, usageMetadata: { promptTokenCount: input, candidatesTokenCount: 1, totalTokenCount: input + 1 } };
    });
    const budget = new RecordingBudget(1_000_000, { countedTokens: 'input' });
    const llm = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent: 4, budget, registry: new Registry(), expectedCallMs: 10 });
    const tree = new LlmAgent({ name: 'writer', model: llm, instruction: 'Answer.' });
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    const runner = new InMemoryRunner({ agent: tree, appName: 'test' });
    const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
    const run = async (text: string, sessionId: string) => {
      for await (const _ of admission.runAsync(runner, { userId: 'u', sessionId, newMessage: { role: 'user', parts: [{ text }] } })) {
        // drain
      }
    };
    await run('first', session.id);
    budget.taken.length = 0;
    prompts.length = 0;
    // The same session: its history makes this prompt larger than the one the writer learned.
    await run('again', session.id);
    const [funded, topUp] = budget.taken;
    expect(budget.taken).toHaveLength(2);
    expect(funded + topUp).toBe(prompts[0]);
    llm.close();
  });

  it("an AgentTool's agent runs on the tool's input, not the request's message: it is funded at what its calls used", async () => {
    const prompts: number[] = [];
    const delegate = new FakeLlm(async function* (call) {
      const input = estimateInputTokens(call.request);
      prompts.push(input);
      const usageMetadata = { promptTokenCount: input, candidatesTokenCount: 1, totalTokenCount: input + 1 };
      const sawToolResult = call.request.contents.some((c) => c.parts?.some((p) => p.functionResponse));
      if (agentNameOf(call.request) === 'checker' || sawToolResult) {
        yield { content: { role: 'model', parts: [{ text: 'checked' }] }, usageMetadata };
        return;
      }
      yield { content: { role: 'model', parts: [{ functionCall: { name: 'checker', args: { request: 'check clause 4' } } }] }, usageMetadata };
    });
    const budget = new RecordingBudget(1_000_000, { countedTokens: 'input' });
    const llm = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent: 4, budget, registry: new Registry(), expectedCallMs: 10 });
    const checker = new LlmAgent({ name: 'checker', model: llm, description: 'Checks one clause.', instruction: 'Check.' });
    const critic = new LlmAgent({ name: 'critic', model: llm, instruction: 'Use the checker.', tools: [new AgentTool({ agent: checker })] });
    const admission = new RequestAdmission({ requestDeadlineMs: 30_000 });
    const runner = new InMemoryRunner({ agent: critic, appName: 'test' });
    // The request's own message: both critic calls carry it in their history, the checker's call does not.
    const contract = 'The supplier shall deliver the goods within thirty days. '.repeat(200);
    const run = async () => {
      const session = await runner.sessionService.createSession({ appName: 'test', userId: 'u' });
      for await (const _ of admission.runAsync(runner, { userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: contract }] } })) {
        // drain
      }
    };
    await run(); // the learner
    budget.taken.length = 0;
    prompts.length = 0;
    await run();
    const [, checkerPrompt] = prompts;
    expect(checkerPrompt).toBeLessThan(estimateInputTokens({ contents: [{ role: 'user', parts: [{ text: contract }] }] }) / 10);
    // One reservation at the door, of what the three calls used: the checker's call was funded
    // at its own small prompt, not at the contract it never saw.
    expect(budget.taken).toHaveLength(1);
    const used = prompts.reduce((sum, tokens) => sum + tokens, 0);
    expect(budget.taken[0]).toBeGreaterThanOrEqual(used - 1);
    expect(budget.taken[0]).toBeLessThanOrEqual(used + 1);
    llm.close();
  });
});
