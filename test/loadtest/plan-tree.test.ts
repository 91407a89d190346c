// The planner's count of model calls from a real ADK agent tree (`plan --agent`): the
// suite's own fixtures (test/fixtures/agents), the CLI's output and errors, and a property:
// on random trees of real ADK agents run by the real Runner, the calls the model sees equal
// the count and never more than the counted width are in flight at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type BaseNode, FunctionNode, InMemoryRunner, JoinNode, LlmAgent, LoopAgent, type NodeLike, ParallelAgent, SequentialAgent, Workflow } from '@google/adk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadAgentModule } from '../../agent/agent-module.ts';
import { declareRunsNode } from '../../instrumentation/tree/runs-node.ts';
import { walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { runCli } from '../../cli/program.ts';
import { type CountedNode, countedNodes, countModelCalls, TreeCountError } from '../../instrumentation/tree/tree-count.ts';
import { FakeLlm, textResponse } from '../../instrumentation/testing.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/agents/${name}`, import.meta.url));
const LOOP_TOOLS = fixture('loop_tools.ts');
const RESEARCH_PIPELINE = fixture('research_pipeline.ts');
const WORKFLOW = fixture('workflow_graph.ts');
const SHAPES = fixture('shapes.ts');

async function counted(spec: string, toolTurns = 1) {
  const { root } = await loadAgentModule(spec);
  return countModelCalls(walkAgentTree(root), { toolTurns });
}

/** Runs the CLI's main in-process and captures what it writes. */
async function runMain(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = process.stdout.write;
  const err = process.stderr.write;
  process.stdout.write = ((chunk: string) => {
    stdout += chunk;
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string) => {
    stderr += chunk;
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: await runCli(['plan', ...argv]), stdout, stderr };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

describe('counting model calls from an agent tree', () => {
  it('the loop + AgentTool tree: sequential sums, parallel sums and widens, loop × maxIterations, tools per turn', async () => {
    const tree = await counted(LOOP_TOOLS);
    const byName = new Map(countedNodes(tree).map((n) => [n.name, n]));
    expect(byName.get('analysts')).toMatchObject({ calls: 3, width: 2 });
    expect(byName.get('deep_dive')).toMatchObject({ calls: 2, width: 1 });
    expect(byName.get('critic')).toMatchObject({ calls: 3, width: 1 });
    expect(byName.get('explainer')).toMatchObject({ calls: 1, role: 'agent-tool' });
    expect(byName.get('refine')).toMatchObject({ calls: 6, iterations: 2 });
    expect(byName.get('deep_check')).toMatchObject({ model: 'gemini-2.5-pro' });
    expect(tree).toMatchObject({ calls: 11, width: 2 });
    // Two tool turns: the critic makes 1 + 2 + 2 × 1 calls per iteration.
    expect((await counted(LOOP_TOOLS, 2)).calls).toBe(1 + 3 + 2 * 5 + 1);
    // No tool turns: the critic answers without tools.
    expect((await counted(LOOP_TOOLS, 0)).calls).toBe(1 + 3 + 2 * 1 + 1);
  });

  it('a Workflow graph: nodes along the edges, the join makes no call, width from the widest step', async () => {
    const tree = await counted(WORKFLOW);
    expect(tree).toMatchObject({ kind: 'workflow', calls: 5, width: 2 });
    expect(countedNodes(tree).find((n) => n.name === 'join_sides')).toMatchObject({ kind: 'join', calls: 0, runs: 1 });
  });

  it('uneven branches and an AgentTool whose agent fans out', async () => {
    expect(await counted(`${SHAPES}#unevenFanOut`)).toMatchObject({ calls: 7, width: 3 });
    expect(await counted(`${SHAPES}#toolUser`)).toMatchObject({ calls: 4, width: 2 });
    expect(await counted(`${SHAPES}#toolUser`, 3)).toMatchObject({ calls: 1 + 3 + 3 * 2, width: 2 });
  });

  it('names what cannot be counted', async () => {
    await expect(counted(`${SHAPES}#unboundedLoop`)).rejects.toThrow('loop "forever" has no maxIterations');
    await expect(counted(`${SHAPES}#codeWorkflow`)).rejects.toThrow(/"guard" is code \(FunctionNode\)/);
  });

  it('a code node that declares the node it runs is counted through it', () => {
    const model = new FakeLlm(async function* () {
      yield textResponse('ok', 1);
    });
    const agent = new LlmAgent({ name: 'guarded_agent', model, instruction: 'Answer.' });
    const guard = declareRunsNode(new FunctionNode('guard', async (ctx, input) => (await ctx.runNode(agent, input)).output ?? ''), agent);
    const tree = countModelCalls(walkAgentTree(new Workflow({ name: 'declared', edges: [['START', guard]] })), { toolTurns: 1 });
    expect(tree).toMatchObject({ calls: 1, width: 1, depth: 1 });
    expect(countedNodes(tree).find((n) => n.name === 'guard')).toMatchObject({ kind: 'wrapper', calls: 1, runs: 1 });
  });
});

describe('plan --agent', () => {
  it('prints the tree with the calls per node and the count', async () => {
    const { code, stdout, stderr } = await runMain(['--agent', LOOP_TOOLS]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^loop_tools \(sequential\) +11 calls, up to 2 at once$/m);
    expect(stdout).toMatch(/^│ {2}└─ deep_dive \(sequential\) +2 calls$/m);
    expect(stdout).toMatch(/^│ {5}└─ AgentTool → explainer \(LlmAgent, gemini-2\.5-flash\) +1 call per use$/m);
    expect(stdout).toContain('11 model calls per request, up to 2 at once');
  });

  it("gives each AgentTool's calls to its own agent's model, not the caller's", async () => {
    const { code, stdout } = await runMain(['--agent', RESEARCH_PIPELINE]);
    expect(code).toBe(0);
    // critic_1 (pro) makes 2 calls (one tool turn); its flash fact checker makes 1.
    expect(stdout).toMatch(/^│ {2}│ {2}└─ critic_1 \(LlmAgent, gemini-2\.5-pro\) +2 calls \+ 1 on gemini-2\.5-flash by its agent tools$/m);
    expect(stdout).toMatch(/^│ {2}│ {5}└─ AgentTool → fact_checker_1 \(LlmAgent, gemini-2\.5-flash\) +1 call per use$/m);
    expect(stdout).toContain('18 model calls per request, up to 3 at once');
  });

  it('feeds the count and the width into the capacity plan', async () => {
    const result = JSON.parse((await runMain(['--agent', WORKFLOW, '--example', 'review-agent', '--json'])).stdout);
    expect(result.plan?.tree).toMatchObject({ callsPerRequest: 5, parallelBranches: 2 });
    // The worked example's traffic at 5 calls per request: 40 users/min → 200 calls/min.
    expect(result.plan?.demand.callsPerMinute).toBe(200);
    const { code, stdout } = await runMain(['--agent', `${SHAPES}#unevenFanOut`, '--example', 'review-agent', '--users-per-minute', '10']);
    expect(code).toBe(0);
    expect(stdout).toContain('Capacity plan:');
    expect(stdout).toContain('70 calls/min');
    const json = await runMain(['--agent', WORKFLOW, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ callsPerRequest: 5, peakWidth: 2, tree: { name: 'workflow_graph' } });
  });

  it('errors are one line naming the loop, the export, the file or the flag, exit code 2', async () => {
    const cases: [string[], RegExp][] = [
      [['--agent', `${SHAPES}#unboundedLoop`], /^plan: loop "forever" has no maxIterations/],
      [['--agent', `${SHAPES}#nope`], /^plan: --agent: agent module .*shapes\.ts: no export "nope"; agent exports: /],
      [['--agent', `${LOOP_TOOLS}#settings`], /^plan: --agent: .*export "settings" is an object/],
      [['--agent', fixture('missing.ts')], /^plan: --agent: .*missing\.ts: no such file/],
      [['--agent', LOOP_TOOLS, '--tool-turns', '-1'], /^plan: --tool-turns: must be >= 0/],
      [['--agent', LOOP_TOOLS, '--tool-turns', 'x'], /^plan: --tool-turns: 'x' is not a number/],
      [['--agent', LOOP_TOOLS, '--tree', '4x1+1'], /^plan: --tree: the tree is counted from --agent/],
      [['--agent', LOOP_TOOLS, '--users-per-minute', '40'], /^plan: --output-tokens: .*required/],
      [['--agent', LOOP_TOOLS, '--users-per-minute', '40', '--input-tokens', '500', '--output-tokens', '50'], /^plan: --latency: .*required/],
      [['--agent', fixture('no_model.ts')], /^plan: agent "\w+" has no model, and no LlmAgent above it has one to inherit/],
      [['--example', 'review-agent', '--quota-tpm', 'gemini-2.5-pro=5'], /^plan: --quota-tpm: per-model values need --agent/],
      [['--agent', LOOP_TOOLS, '--example', 'review-agent', '--quota-tpm', 'gemini-2.5-pro=5'], /^plan: --quota-tpm: no quota for model gemini-2\.5-flash/],
    ];
    for (const [argv, expected] of cases) {
      const { code, stdout, stderr } = await runMain(argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toMatch(expected);
      expect(stderr.trimEnd()).not.toContain('\n');
    }
  });
});

// A random tree shape: an agent, or a sequential / parallel / bounded loop of shapes.
type Shape = { kind: 'llm' } | { kind: 'seq' | 'par'; children: Shape[] } | { kind: 'loop'; max: number; children: Shape[] };

const shape: fc.Arbitrary<Shape> = fc.letrec<{ node: Shape }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant({ kind: 'llm' } as const),
    fc.record({ kind: fc.constantFrom('seq' as const, 'par' as const), children: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ kind: fc.constant('loop' as const), max: fc.integer({ min: 1, max: 3 }), children: fc.array(tie('node'), { minLength: 1, maxLength: 2 }) }),
  ),
})).node;

function build(s: Shape, model: FakeLlm, names: { next: number }): LlmAgent | SequentialAgent | ParallelAgent | LoopAgent {
  const name = `n${names.next++}`;
  if (s.kind === 'llm') return new LlmAgent({ name, model, instruction: 'Answer.' });
  const subAgents = s.children.map((c) => build(c, model, names));
  if (s.kind === 'loop') return new LoopAgent({ name, maxIterations: s.max, subAgents });
  return s.kind === 'seq' ? new SequentialAgent({ name, subAgents }) : new ParallelAgent({ name, subAgents });
}

describe('property: the count matches what the real ADK Runner calls', () => {
  it('calls seen by the model = the count; in flight at once <= the counted width', async () => {
    await fc.assert(
      fc.asyncProperty(shape, async (s) => {
        const model = new FakeLlm(async function* () {
          await sleep(2);
          yield textResponse('ok', 10);
        });
        const root = build(s, model, { next: 0 });
        const tree = countModelCalls(walkAgentTree(root), { toolTurns: 1 });
        const runner = new InMemoryRunner({ agent: root, appName: 'property' });
        for await (const _ of runner.runEphemeral({ userId: 'u', newMessage: { role: 'user', parts: [{ text: 'go' }] } })) {
          // drain
        }
        expect(model.calls.length).toBe(tree.calls);
        expect(model.maxInFlight).toBeLessThanOrEqual(tree.width);
      }),
      { numRuns: 40 },
    );
  });
});

// A random layered Workflow graph: START → layer 0; every node of a later layer hangs off a
// non-empty subset of the layer before it; some nodes are joins; all ends meet in a final join.
interface GraphNode {
  join: boolean;
  /** An agent run through a code node that declares it (declareRunsNode), as the sample review workflow's guards. */
  guard: boolean;
  /** Picks of the previous layer's nodes (taken modulo its size; at least one). */
  from: number[];
}
const graph = fc.array(
  fc.array(fc.record({ join: fc.boolean(), guard: fc.boolean(), from: fc.uniqueArray(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }) }), {
    minLength: 1,
    maxLength: 3,
  }),
  { minLength: 1, maxLength: 4 },
);

/** A code node that runs `agent` once and declares it. */
const guarded = (agent: LlmAgent) =>
  declareRunsNode(
    new FunctionNode(`guard_${agent.name}`, async (ctx, input) => (await ctx.runNode(agent, input)).output ?? ''),
    agent,
  );

function buildWorkflow(layers: GraphNode[][], model: FakeLlm): Workflow {
  const built: BaseNode[][] = [];
  const edges: [NodeLike, NodeLike][] = [];
  let next = 0;
  layers.forEach((layer, i) => {
    built.push(
      layer.map((spec) => {
        const name = `g${next++}`;
        const node = i > 0 && spec.join ? new JoinNode({ name }) : spec.guard ? guarded(new LlmAgent({ name, model, instruction: 'Answer.' })) : new LlmAgent({ name, model, instruction: 'Answer.' });
        if (i === 0) edges.push(['START', node]);
        else for (const pick of new Set(spec.from.map((f) => f % built[i - 1].length))) edges.push([built[i - 1][pick], node]);
        return node;
      }),
    );
  });
  // ADK allows one terminal output: every node without a successor feeds a final join and agent.
  const finalJoin = new JoinNode({ name: 'final_join' });
  const fed = new Set(edges.map(([from]) => from));
  for (const node of built.flat()) if (!fed.has(node)) edges.push([node, finalJoin]);
  edges.push([finalJoin, new LlmAgent({ name: 'final', model, instruction: 'Answer.' })]);
  return new Workflow({ name: 'random_graph', edges });
}

describe('property: Workflow graphs are counted as the real ADK Runner runs them', () => {
  // The width of a graph assumes equal call times (its widest step), so only the calls are exact.
  it('calls seen by the model = the count', async () => {
    await fc.assert(
      fc.asyncProperty(graph, async (layers) => {
        const model = new FakeLlm(async function* () {
          await sleep(2);
          yield textResponse('ok', 10);
        });
        const root = buildWorkflow(layers, model);
        let tree: CountedNode;
        try {
          tree = countModelCalls(walkAgentTree(root), { toolTurns: 1 });
        } catch (error) {
          // A join after a node that runs several times fires a timing-dependent number of times.
          fc.pre(!(error instanceof TreeCountError && error.message.includes('depends on timing')));
          throw error;
        }
        const runner = new InMemoryRunner({ agent: root, appName: 'property' });
        for await (const _ of runner.runEphemeral({ userId: 'u', newMessage: { role: 'user', parts: [{ text: 'go' }] } })) {
          // drain
        }
        expect(model.calls.length).toBe(tree.calls);
      }),
      { numRuns: 40 },
    );
  });
});
