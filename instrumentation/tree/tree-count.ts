// Model calls per user request, counted from a real ADK agent tree (tree-walk.ts),
// and the peak number of them in flight at once (the fan-out width):
//   LlmAgent    1, plus toolTurns if it has tools, plus each AgentTool's inner calls per turn
//   Sequential  the sum of its children; width: the widest child
//   Parallel    the sum; width: the sum of the children's widths
//   Loop        the body × maxIterations (a loop without maxIterations cannot be counted)
//   Workflow    every node's calls × the times the graph runs it, along the edges from START;
//               width: the widest step (nodes the same number of edges from START), i.e. as
//               if every call took the same time; branches of unequal length can overlap more
//   Wrapper     code that declared the node it runs once (runs-node.ts): that node's calls
// and the calls on its critical path (the depth: what one request takes end to end, in calls).
// The same counts per model (`models`): a quota is per model, so each model's calls and
// width are what its limiter and the planner size (an inherited model counts as its parent's).
// What cannot be counted statically (a loop without a bound, routes chosen at run time, code
// nodes whose model calls are invisible) is a TreeCountError naming the node. The planner
// plans with it; `serve` publishes it at GET /v1/agents for plan vs measured; request
// admission funds a request with it.
import type { AgentTreeNode } from './tree-walk.ts';

/** Rounds of tool calls an LlmAgent with tools is taken to make (the mock provider makes one). */
export const DEFAULT_TOOL_TURNS = 1;

export interface CountOptions {
  /** Extra model calls of an LlmAgent with tools: one per round of tool calls it makes. */
  readonly toolTurns: number;
}

/** One model's share of a node's calls. */
export interface ModelCount {
  readonly calls: number;
  readonly width: number;
}

/** One node of the tree with its count. */
export interface CountedNode {
  readonly name: string;
  readonly kind: AgentTreeNode['kind'];
  /** Model calls of one run of this node, everything below it included. */
  readonly calls: number;
  /** Most of those calls in flight at once. */
  readonly width: number;
  /** Calls one after another on the longest path through this node (its critical path). */
  readonly depth: number;
  /** LlmAgents: rounds of tool calls counted (each is one more model call). */
  readonly turns?: number;
  /** Workflow nodes: how many times one run of the graph runs it. */
  readonly runs?: number;
  /** The model name of an LlmAgent (`inherited` when it takes its parent's). */
  readonly model?: string;
  /** Loops: the iterations counted. */
  readonly iterations?: number;
  /** How the children are reached: an AgentTool's agent, a transfer target (not counted). */
  readonly role?: 'agent-tool' | 'transfer-target';
  /** Per model name (an inherited model as its parent's): the calls and width of that model alone. */
  readonly models: Readonly<Record<string, ModelCount>>;
  readonly children: readonly CountedNode[];
}

export class TreeCountError extends Error {
  override name = 'TreeCountError';
}

const START = '__START__';

type NodeOf<K extends AgentTreeNode['kind']> = Extract<AgentTreeNode, { kind: K }>;

function modelName(node: NodeOf<'llm'>): string {
  const model = node.agent.model;
  if (model === undefined || model === '') return 'inherited';
  return typeof model === 'string' ? model : model.model;
}

/** The model an LlmAgent's calls go to: its own, else the one it inherits (`unknown` when none resolves). */
function servedModelName(node: NodeOf<'llm'>): string {
  const own = modelName(node);
  if (own !== 'inherited') return own;
  try {
    return node.agent.canonicalModel.model;
  } catch {
    return 'unknown';
  }
}

type ModelCounts = Record<string, ModelCount>;

/** Per model: calls added up, widths combined by `width` (sum: side by side; max: one after another). */
function combine(parts: readonly Readonly<ModelCounts>[], width: 'sum' | 'max', times = 1): ModelCounts {
  const out: ModelCounts = {};
  for (const part of parts) {
    for (const [model, c] of Object.entries(part)) {
      const prev = out[model] ?? { calls: 0, width: 0 };
      out[model] = { calls: prev.calls + c.calls * times, width: width === 'sum' ? prev.width + c.width : Math.max(prev.width, c.width) };
    }
  }
  return out;
}

/** Counts the model calls of one run of `tree`. */
export function countModelCalls(tree: AgentTreeNode, options: CountOptions): CountedNode {
  return count(tree, options);
}

function count(node: AgentTreeNode, options: CountOptions): CountedNode {
  switch (node.kind) {
    case 'llm':
      return countLlm(node, options);
    case 'sequential':
    case 'parallel':
      return countSiblings(node, options);
    case 'loop':
      return countLoop(node, options);
    case 'workflow':
      return countWorkflow(node, options);
    case 'join':
      return { name: node.name, kind: node.kind, calls: 0, width: 0, depth: 0, models: {}, children: [] };
    case 'tool':
    case 'wrapper':
      return countInner(node, options);
    case 'parallel-worker':
      throw new TreeCountError(`workflow node "${node.name}" runs "${node.inner.name}" once per input item: the count depends on the input`);
    case 'code':
      throw new TreeCountError(
        `"${node.name}" is code (${node.className}): the model calls it makes are not visible to the count (give --calls-per-request instead)`,
      );
  }
}

function countLlm(node: NodeOf<'llm'>, options: CountOptions): CountedNode {
  const tools = node.agentTools.map((t) => ({ ...count(t, options), role: 'agent-tool' as const }));
  // Transfer targets run only when the model decides to hand over: not counted.
  const transfers = node.children.map((c) => ({ ...count(c, options), role: 'transfer-target' as const }));
  const turns = node.toolCount > 0 ? options.toolTurns : 0;
  const innerCalls = tools.reduce((sum, t) => sum + t.calls, 0);
  const innerWidth = tools.reduce((sum, t) => sum + t.width, 0);
  const innerDepth = Math.max(0, ...tools.map((t) => t.depth));
  const inner = turns > 0 ? combine(tools.map((t) => t.models), 'sum', turns) : {};
  // The agent's own calls, then its tools' (one turn's width at a time).
  const models = combine([{ [servedModelName(node)]: { calls: 1 + turns, width: 1 } }, inner], 'max');
  return {
    name: node.name,
    kind: node.kind,
    calls: 1 + turns + turns * innerCalls,
    // A turn's tool calls run together; the agent's own call is not in flight meanwhile.
    width: Math.max(1, turns > 0 ? innerWidth : 0),
    // Its call, then per turn the tools (together) and the call that reads their results.
    depth: 1 + turns * (innerDepth + 1),
    turns,
    model: modelName(node),
    models,
    children: [...tools, ...transfers],
  };
}

function countSiblings(node: NodeOf<'sequential' | 'parallel'>, options: CountOptions): CountedNode {
  const children = node.children.map((c) => count(c, options));
  const side = node.kind === 'parallel';
  const calls = children.reduce((sum, c) => sum + c.calls, 0);
  const width = side ? children.reduce((sum, c) => sum + c.width, 0) : Math.max(0, ...children.map((c) => c.width));
  const models = combine(
    children.map((c) => c.models),
    side ? 'sum' : 'max',
  );
  const depth = side ? Math.max(0, ...children.map((c) => c.depth)) : children.reduce((sum, c) => sum + c.depth, 0);
  return { name: node.name, kind: node.kind, calls, width, depth, models, children };
}

function countLoop(node: NodeOf<'loop'>, options: CountOptions): CountedNode {
  if (node.maxIterations === undefined) {
    throw new TreeCountError(`loop "${node.name}" has no maxIterations: its model calls cannot be counted (give it maxIterations)`);
  }
  const children = node.children.map((c) => count(c, options));
  const body = children.reduce((sum, c) => sum + c.calls, 0);
  return {
    name: node.name,
    kind: node.kind,
    calls: body * node.maxIterations,
    width: Math.max(0, ...children.map((c) => c.width)),
    depth: children.reduce((sum, c) => sum + c.depth, 0) * node.maxIterations,
    iterations: node.maxIterations,
    models: combine(
      children.map((c) => c.models),
      'max',
      node.maxIterations,
    ),
    children,
  };
}

/** A node that runs one inner node once: a tool node (its AgentTool's agent, if any) or a declared wrapper. */
function countInner(node: NodeOf<'tool' | 'wrapper'>, options: CountOptions): CountedNode {
  const inner = node.inner ? [node.kind === 'tool' ? { ...count(node.inner, options), role: 'agent-tool' as const } : count(node.inner, options)] : [];
  return {
    name: node.name,
    kind: node.kind,
    calls: inner[0]?.calls ?? 0,
    width: inner[0]?.width ?? 0,
    depth: inner[0]?.depth ?? 0,
    models: inner[0]?.models ?? {},
    children: inner,
  };
}

function countWorkflow(node: NodeOf<'workflow'>, options: CountOptions): CountedNode {
  if (node.dynamic) throw new TreeCountError(`workflow "${node.name}" is driven by a function (dynamicEntry): it has no graph to count`);
  const routed = node.edges.find((e) => e.route !== null);
  if (routed) {
    throw new TreeCountError(
      `workflow "${node.name}": the edge ${routed.from} → ${routed.to} is taken only on route "${routed.route}", chosen at run time: the count needs a graph without routes`,
    );
  }
  const counted = new Map(node.nodes.map((n) => [n.name, count(n, options)]));
  const { runs, step, pathDepth } = walkGraph(node, counted);
  const children = node.nodes.map((n) => ({ ...(counted.get(n.name) as CountedNode), runs: runs.get(n.name) ?? 0 }));
  const calls = children.reduce((sum, c) => sum + c.calls * (c.runs ?? 0), 0);
  const cap = node.maxConcurrency ?? Number.POSITIVE_INFINITY;
  const width = widestStep(children, step, cap, (c) => c.width);
  // Per model: every node's calls × its runs; the width of the widest step of that model's nodes.
  const models: ModelCounts = {};
  for (const c of children) {
    for (const [model, m] of Object.entries(c.models)) models[model] = { calls: (models[model]?.calls ?? 0) + m.calls * (c.runs ?? 0), width: 0 };
  }
  for (const model of Object.keys(models)) {
    models[model] = { calls: models[model].calls, width: widestStep(children, step, cap, (c) => c.models[model]?.width) };
  }
  const depth = Math.max(0, ...node.nodes.map((n) => pathDepth.get(n.name) ?? 0));
  return { name: node.name, kind: node.kind, calls, width, depth, models, children };
}

/**
 * Per node of the graph, in topological order (a cycle has none): the times one run of the
 * graph runs it, its step (longest edge count from START) and the calls on the longest path
 * from START to its end.
 */
function walkGraph(node: NodeOf<'workflow'>, counted: ReadonlyMap<string, CountedNode>) {
  const byName = new Map(node.nodes.map((n) => [n.name, n]));
  const incoming = new Map<string, string[]>(node.nodes.map((n) => [n.name, []]));
  for (const e of node.edges) incoming.get(e.to)?.push(e.from);
  const runs = new Map<string, number>([[START, 1]]);
  const step = new Map<string, number>([[START, 0]]);
  const pathDepth = new Map<string, number>([[START, 0]]);
  const pending = new Set(node.nodes.map((n) => n.name));
  while (pending.size > 0) {
    const ready = [...pending].find((name) => (incoming.get(name) ?? []).every((from) => runs.has(from)));
    if (ready === undefined) {
      throw new TreeCountError(`workflow "${node.name}": its graph has a cycle through ${[...pending].join(', ')}: the count needs an acyclic graph`);
    }
    pending.delete(ready);
    const from = incoming.get(ready) ?? [];
    const fromRuns = from.map((f) => runs.get(f) ?? 0);
    // A join fires when a predecessor finishes while all of them have finished: once when
    // each runs once, a number that depends on timing when one runs more often. Any other
    // node runs once per trigger.
    const isJoin = byName.get(ready)?.kind === 'join';
    const rerun = isJoin ? from.find((f) => (runs.get(f) ?? 0) > 1) : undefined;
    if (rerun !== undefined) {
      throw new TreeCountError(
        `workflow "${node.name}": join "${ready}" follows "${rerun}", which runs ${runs.get(rerun)} times: how often the join fires depends on timing`,
      );
    }
    const times = isJoin ? Math.min(...fromRuns) : fromRuns.reduce((sum, r) => sum + r, 0);
    runs.set(ready, from.length === 0 ? 0 : times);
    step.set(ready, from.length === 0 ? 0 : 1 + Math.max(...from.map((f) => step.get(f) ?? 0)));
    const before = from.length === 0 ? 0 : Math.max(...from.map((f) => pathDepth.get(f) ?? 0));
    pathDepth.set(ready, before + (runs.get(ready) ? (counted.get(ready)?.depth ?? 0) : 0));
  }
  return { runs, step, pathDepth };
}

/**
 * The width of a graph's widest step: each run of each node in the step adds its `widthOf`
 * (undefined: not in it), and maxConcurrency (`cap`) lets only that many run at once, the
 * widest ones at worst.
 */
function widestStep(
  children: readonly CountedNode[],
  step: ReadonlyMap<string, number>,
  cap: number,
  widthOf: (child: CountedNode) => number | undefined,
): number {
  const byStep = new Map<number, number[]>();
  for (const c of children) {
    const w = widthOf(c);
    if (!c.runs || w === undefined) continue;
    const s = step.get(c.name) ?? 0;
    byStep.set(s, [...(byStep.get(s) ?? []), ...Array<number>(c.runs).fill(w)]);
  }
  const stepWidth = (widths: number[]) =>
    [...widths]
      .sort((a, b) => b - a)
      .slice(0, cap)
      .reduce((sum, w) => sum + w, 0);
  return Math.max(0, ...[...byStep.values()].map(stepWidth));
}

/**
 * Model calls of one run of the tree per LlmAgent name: each agent's own calls times how
 * often the tree runs it (loop iterations, workflow runs, tool turns of the agent whose
 * AgentTool it is). Transfer targets are not counted, as in the total.
 */
export function callsByAgent(root: CountedNode): Map<string, number> {
  const calls = new Map<string, number>();
  const visit = (node: CountedNode, times: number) => {
    if (times === 0) return;
    if (node.kind === 'llm') {
      const turns = node.turns ?? 0;
      calls.set(node.name, (calls.get(node.name) ?? 0) + times * (1 + turns));
      for (const child of node.children) if (child.role === 'agent-tool') visit(child, times * turns);
      return;
    }
    const each = node.kind === 'loop' ? times * (node.iterations ?? 0) : times;
    for (const child of node.children) visit(child, node.kind === 'workflow' ? each * (child.runs ?? 0) : each);
  };
  visit(root, 1);
  return calls;
}

/** The models the tree calls, most calls first, each with its share. */
export function modelShares(tree: CountedNode): { model: string; calls: number; width: number }[] {
  return Object.entries(tree.models)
    .filter(([, c]) => c.calls > 0)
    .map(([model, c]) => ({ model, ...c }))
    .sort((a, b) => b.calls - a.calls || a.model.localeCompare(b.model));
}

/** Every node of a counted tree, depth first (for tests and reports). */
export function countedNodes(root: CountedNode): CountedNode[] {
  return [root, ...root.children.flatMap(countedNodes)];
}
