// The forward run: real ADK trees through one replica's real door (wrapModels, RequestAdmission)
// on a manual clock, answered as the mock answers. Arithmetic brackets what the door serves:
// whole requests per window (floor(share / request)) when a request's calls start together,
// the tokens' exact share (share / request) when they interleave perfectly. The run must find
// the first for a fan-out and come well above it for a long chain, never above the second,
// and leave no request partial.
import { fileURLToPath } from 'node:url';
import { type BaseAgent, LlmAgent, ParallelAgent, SequentialAgent } from '@google/adk';
import { describe, expect, it } from 'vitest';
import { calibrateTree, inputTokensPerModel } from '../../loadtest/planner/calibrate.ts';
import { countAgent } from '../../loadtest/planner/agent-plan.ts';
import { latencyOfFullAnswer } from '../../loadtest/planner/call-time.ts';
import { ForwardRunError, forwardRun } from '../../loadtest/planner/forward-run.ts';
import { FakeLlm, textResponse } from '../../instrumentation/testing.ts';
import { documentForTokens } from '../../loadtest/scenario/document.ts';
import { llmAgentsOf, walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { parseConfig } from '../../mock-provider/config.ts';

const RESEARCH = fileURLToPath(new URL('../fixtures/agents/research_pipeline.ts', import.meta.url));
const OUTPUT = 200;
const MESSAGE_TOKENS = 2000;
const message = documentForTokens(MESSAGE_TOKENS, MESSAGE_TOKENS);

/** The run's mock as `start` configures it: calls of `callSeconds` for a full answer. */
function mockOf(callSeconds: number) {
  const latency = latencyOfFullAnswer(callSeconds, OUTPUT);
  return parseConfig({
    timeToFirstTokenMs: { kind: 'fixed', value: Math.round(latency.firstTokenSeconds * 1000) },
    perOutputTokenMs: { kind: 'fixed', value: latency.perOutputTokenSeconds * 1000 },
    outputTokens: { kind: 'fixed', value: OUTPUT },
  });
}

/** Counted input tokens of one request on `model`, as the calibration request measured them. */
async function requestTokens(root: BaseAgent, model: string): Promise<number> {
  const agents = llmAgentsOf(walkAgentTree(root));
  const calibration = await calibrateTree(root, agents, { message, outputTokensPerCall: OUTPUT });
  return calibration.agents.filter((a) => a.model === model).reduce((sum, a) => sum + a.inputTokens, 0);
}

/** Serves `root` through one replica whose `model` budget holds `requestsPerWindow` of its requests. */
async function served(root: BaseAgent, model: string, requestsPerWindow: number, callSeconds: number) {
  const tokens = await requestTokens(root, model);
  const agents = llmAgentsOf(walkAgentTree(root));
  const models = agents.map((agent) => agent.model);
  const run = await forwardRun({
    root,
    agents,
    mock: mockOf(callSeconds),
    message,
    countedWindows: 20,
    limiter: {
      admission: 'request',
      countedTokens: 'input',
      // The other models' budgets never bind.
      tokensPerMinute: { [model]: Math.round(requestsPerWindow * tokens), '*': 100_000_000 },
      expectedCallMs: callSeconds * 1000,
      expectedTokensPerCall: Math.ceil(tokens / agents.length),
      permits: 20,
    },
  });
  // Every agent has its own model back.
  expect(agents.map((agent) => agent.model)).toEqual(models);
  return run;
}

describe('the forward run of a tree through one replica door', () => {
  it('a fan-out whose calls start together: the window holds whole requests only', async () => {
    const root = new ParallelAgent({
      name: 'fan_out',
      subAgents: [1, 2, 3].map((i) => new LlmAgent({ name: `reader_${i}`, model: 'gemini-2.5-flash', instruction: `Read part ${i}.` })),
    });
    // 2.5 requests' tokens a window: 2 whole requests fit in it.
    const run = await served(root, 'gemini-2.5-flash', 2.5, 4);
    expect(run.partial).toBe(0);
    expect(run.servedPerMinute).toBeGreaterThanOrEqual(1.9);
    expect(run.servedPerMinute).toBeLessThanOrEqual(2.1);
  }, 120_000);

  it('a chain of 8 calls over longer than a window: the requests interleave, well above whole windows and within the exact share', async () => {
    const root = new SequentialAgent({
      name: 'chain',
      subAgents: Array.from({ length: 8 }, (_, i) => new LlmAgent({ name: `step_${i + 1}`, model: 'gemini-2.5-flash', instruction: `Do step ${i + 1}.` })),
    });
    const run = await served(root, 'gemini-2.5-flash', 2.5, 10);
    expect(run.partial).toBe(0);
    expect(run.servedPerMinute).toBeGreaterThan(2.2);
    expect(run.servedPerMinute).toBeLessThanOrEqual(2.5);
  }, 120_000);

  it('the deep two-model research pipeline (chain of 8, loop, AgentTool), as start runs it: none partial, within the binding model exact share; cold limiters that know no cost too', async () => {
    const { module, agents } = await countAgent(RESEARCH);
    const root = module.root as BaseAgent;
    // start's run: 5,000-token messages, 800-token answers in 8 s, 900,000 tokens/min per model over 3 replicas.
    const startMessage = documentForTokens(5000, 5000);
    const calibration = await calibrateTree(root, agents, { message: startMessage, outputTokensPerCall: 800 });
    const expected = Object.fromEntries([...inputTokensPerModel(calibration)].map(([model, tokens]) => [model, Math.ceil(tokens)]));
    const proTokens = calibration.agents.filter((a) => a.model === 'gemini-2.5-pro').reduce((sum, a) => sum + a.inputTokens, 0);
    const latency = latencyOfFullAnswer(8, 800);
    const mock = parseConfig({
      timeToFirstTokenMs: { kind: 'fixed', value: Math.round(latency.firstTokenSeconds * 1000) },
      perOutputTokenMs: { kind: 'fixed', value: latency.perOutputTokenSeconds * 1000 },
      outputTokens: { kind: 'normal', mean: 800, stddev: 100 },
    });
    const limiter = { permits: 10, tokensPerMinute: 900_000, replicaShare: 1 / 3, maxWaitMs: 20_000, admission: 'request' as const, countedTokens: 'input' as const, expectedCallMs: 8000 };
    for (const expectedTokensPerCall of [expected, undefined]) {
      const run = await forwardRun({ root, agents, mock, message: startMessage, countedWindows: 20, limiter: { ...limiter, ...(expectedTokensPerCall ? { expectedTokensPerCall } : {}) } });
      expect(run.partial).toBe(0);
      expect(run.servedPerMinute).toBeGreaterThan(2.5);
      expect(run.servedPerMinute).toBeLessThanOrEqual(300_000 / proTokens);
    }
  }, 120_000);

  it("refuses a tree with a model of the user's own (its calls would leave the run), and gives every agent its model back", async () => {
    const own = new FakeLlm(async function* () {
      yield textResponse('never called');
    });
    const agents = [new LlmAgent({ name: 'mine', model: own, instruction: 'Mine.' }), new LlmAgent({ name: 'theirs', model: 'gemini-2.5-flash', instruction: 'Theirs.' })];
    const root = new SequentialAgent({ name: 'mixed', subAgents: agents });
    const run = forwardRun({ root, agents, mock: mockOf(1), message, limiter: { admission: 'request' } });
    await expect(run).rejects.toThrow(ForwardRunError);
    await expect(run).rejects.toThrow(/agent "mine" keeps a model of its own \(custom model\)/);
    expect(agents.map((agent) => agent.model)).toEqual([own, 'gemini-2.5-flash']);
    expect(own.calls).toHaveLength(0);
  });
});
