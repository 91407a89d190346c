// The sample agent trees. Every LlmAgent of a tree gets the SAME model object (one
// RateLimitedLlm per model and quota), so the tree's fan-out competes for one set of
// permits and one token budget, exactly like a production agent would.
import {
  AgentTool,
  type BaseLlm,
  FunctionNode,
  FunctionTool,
  JoinNode,
  LlmAgent,
  ParallelAgent,
  type RunnableRoot,
  SequentialAgent,
  Workflow,
} from '@google/adk';
import { Type } from '@google/genai';

import { countModelCalls, DEFAULT_TOOL_TURNS } from '../instrumentation/tree/tree-count.ts';
import { declareRunsNode } from '../instrumentation/tree/runs-node.ts';
import { walkAgentTree } from '../instrumentation/tree/tree-walk.ts';
import { REVIEWERS } from './reviewers.ts';
import type { TreeName } from './tree-shapes.ts';

/** Model calls of one run of a tree whose count is fixed, counted as `serve` counts a user's tree. */
const countedCalls = (root: RunnableRoot): number => countModelCalls(walkAgentTree(root), { toolTurns: DEFAULT_TOOL_TURNS }).calls;

/** The author of the final answer in every tree. */
export const SYNTHESIZER = 'synthesizer';

export interface TreeParams {
  /** `wide` only: number of branches N. */
  branches: number;
  /** `wide` only: at most this many branches of one request run at once (k). */
  width: number;
  /** `tools` only: how long the slow function tool takes, in ms. */
  toolDelayMs: number;
}

export interface BuiltTree {
  root: RunnableRoot;
  /** Names of the agents whose outcome the response reports, in order. */
  branches: string[];
  /** RunConfig.maxLlmCalls for one run of this tree: a hard stop on runaway loops. */
  maxLlmCalls: number;
}

/**
 * The synthesizer reads each branch's output key through an OPTIONAL placeholder
 * (`{review_1?}`): a required one throws "Context variable not found" as soon as one
 * branch failed, turning one missing review into a failed request.
 */
function synthesizer(model: BaseLlm, outputKeys: readonly string[]): LlmAgent {
  const sections = outputKeys.map((key) => `- ${key}: {${key}?}`).join('\n');
  return new LlmAgent({
    name: SYNTHESIZER,
    model,
    description: 'Merges the reviews into one answer.',
    instruction:
      'You merge independent reviews of one document into a single prioritised list of findings. ' +
      'Some reviews may be empty because that reviewer was unavailable; work with what is there.\n' +
      sections,
  });
}

function reviewer(model: BaseLlm, name: string, focus: string, outputKey: string, tools?: LlmAgent['tools']) {
  return new LlmAgent({
    name,
    model,
    description: `Reviews the document for ${focus}.`,
    instruction: `You review the user's document for ${focus}. Answer with a short list of findings.`,
    outputKey,
    ...(tools ? { tools } : {}),
  });
}

/** SequentialAgent `name` [ParallelAgent `parallelName` of the reviewers, the synthesizer of their outputs]. */
function reviewThenSynthesize(model: BaseLlm, name: string, parallelName: string, reviewers: LlmAgent[]): SequentialAgent {
  return new SequentialAgent({
    name,
    subAgents: [
      new ParallelAgent({ name: parallelName, subAgents: reviewers }),
      synthesizer(
        model,
        reviewers.map((r) => r.outputKey!),
      ),
    ],
  });
}

/** `review`: SequentialAgent [ParallelAgent of 4 reviewers, synthesizer]: 5 model calls. */
function reviewTree(model: BaseLlm): BuiltTree {
  const reviewers = REVIEWERS.map((r, i) => reviewer(model, r.name, r.focus, `review_${i + 1}`));
  const root = reviewThenSynthesize(model, 'review', 'reviewers', reviewers);
  return { root, branches: [...REVIEWERS.map((r) => r.name), SYNTHESIZER], maxLlmCalls: countedCalls(root) };
}

/**
 * A Workflow node that runs `agent` and turns its failure into an empty output. In a
 * Workflow a failed node fails the whole run (the finished reviews and every branch
 * outcome would be lost); the agent's own error event (author = agent) still reaches the
 * service, so its branch outcome records the failure. It declares the agent it runs, so the
 * count sees the agent's calls through it.
 */
function guarded(agent: LlmAgent): FunctionNode {
  const guard = new FunctionNode(`guard_${agent.name}`, async (ctx, input) => {
    try {
      const result = await ctx.runNode(agent, input);
      return result.output ?? '';
    } catch {
      return '';
    }
  });
  return declareRunsNode(guard, agent);
}

/**
 * `review-workflow`: the same review as an ADK 2.0 Workflow graph
 * START → 4 reviewers → join → synthesizer, every agent in a guard node, so a failed
 * reviewer or synthesizer call ends as in the classic tree: siblings go on, the request
 * answers 200 with each branch's outcome.
 */
function reviewWorkflowTree(model: BaseLlm): BuiltTree {
  const reviewers = REVIEWERS.map((r, i) => guarded(reviewer(model, r.name, r.focus, `review_${i + 1}`)));
  const synth = guarded(
    synthesizer(
      model,
      REVIEWERS.map((_, i) => `review_${i + 1}`),
    ),
  );
  const root = new Workflow({
    name: 'review_workflow',
    edges: [['START', reviewers, new JoinNode({ name: 'join_reviews' }), synth]],
  });
  return { root, branches: [...REVIEWERS.map((r) => r.name), SYNTHESIZER], maxLlmCalls: countedCalls(root) };
}

/**
 * `wide`: N branches run in waves of at most k (a SequentialAgent of ParallelAgents), so
 * one request never holds more than k permits and cannot starve the others.
 */
function wideTree(model: BaseLlm, params: TreeParams): BuiltTree {
  const names = Array.from({ length: params.branches }, (_, i) => `branch_${i + 1}`);
  const waves: ParallelAgent[] = [];
  for (let start = 0; start < names.length; start += params.width) {
    const members = names.slice(start, start + params.width).map(
      (name) =>
        new LlmAgent({
          name,
          model,
          instruction: `You are analyst ${name}. Give one independent observation about the user's document.`,
          outputKey: name,
        }),
    );
    waves.push(new ParallelAgent({ name: `wave_${waves.length + 1}`, subAgents: members }));
  }
  const root = new SequentialAgent({ name: 'wide', subAgents: [...waves, synthesizer(model, names)] });
  return { root, branches: [...names, SYNTHESIZER], maxLlmCalls: names.length + 1 };
}

/**
 * `tools`: two reviewers that may call a slow function tool (a linter) and an agent used
 * as a tool (AgentTool) whose inner agent uses the same model. The wrapper holds a permit
 * only for the model call, so even with one permit the inner agent's call gets it while
 * the outer reviewer waits for the tool result: no deadlock.
 */
function toolsTree(model: BaseLlm, params: TreeParams): BuiltTree {
  const linter = new FunctionTool({
    name: 'run_linter',
    description: 'Runs the static analyser over a code snippet and returns its warnings.',
    parameters: {
      type: Type.OBJECT,
      properties: { snippet: { type: Type.STRING, description: 'The code to analyse.' } },
    },
    execute: async (input: unknown) => {
      await new Promise((resolve) => setTimeout(resolve, params.toolDelayMs));
      const snippet = typeof input === 'object' && input !== null ? String((input as { snippet?: unknown }).snippet ?? '') : '';
      return { warnings: snippet.includes('eval') ? ['avoid eval'] : [], analysedChars: snippet.length };
    },
  });
  const explainer = new LlmAgent({
    name: 'explainer',
    model,
    description: 'Explains a piece of code in two sentences.',
    instruction: 'Explain the code you are given in two sentences.',
  });
  const helperTools = [linter, new AgentTool({ agent: explainer })];
  const reviewers = [
    reviewer(model, 'security', REVIEWERS[1].focus, 'review_1', helperTools),
    reviewer(model, 'tests', REVIEWERS[3].focus, 'review_2', helperTools),
  ];
  const root = reviewThenSynthesize(model, 'tools', 'tool_reviewers', reviewers);
  // Per reviewer: a call that asks for tools, one after the tool results, and slack for
  // a second round. The AgentTool's inner run is a separate invocation with its own count.
  return { root, branches: [...reviewers.map((r) => r.name), SYNTHESIZER], maxLlmCalls: reviewers.length * 4 + 1 };
}

export function buildTree(name: TreeName, model: BaseLlm, params: TreeParams): BuiltTree {
  switch (name) {
    case 'review':
      return reviewTree(model);
    case 'review-workflow':
      return reviewWorkflowTree(model);
    case 'wide':
      return wideTree(model, params);
    case 'tools':
      return toolsTree(model, params);
  }
}
