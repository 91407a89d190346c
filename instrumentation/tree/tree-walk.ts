// The shape of an ADK agent tree, read from the live objects: sub-agents of the classic
// agents, the inner agent of every AgentTool an LlmAgent carries, and the nodes and edges
// of a Workflow graph. `serve` walks it to wrap every model; the planner counts model calls
// on it. Classes are recognised by their ADK brands (adk-brands.ts), so an agent built with
// another copy of @google/adk is recognised too.
import type { BaseAgent, BaseNode, LlmAgent, RunnableRoot } from '@google/adk';
import * as brands from './adk-brands.ts';
import { declaredInnerNode } from './runs-node.ts';

/** An edge of a Workflow graph, by node name; `route` is set when the edge is taken only on that route. */
export interface WorkflowEdge {
  readonly from: string;
  readonly to: string;
  readonly route: string | null;
}

export type AgentTreeNode =
  | {
      readonly kind: 'llm';
      readonly name: string;
      readonly agent: LlmAgent;
      /** How many tools the agent declares (function tools, AgentTools, toolsets). */
      readonly toolCount: number;
      /** The inner agent of each of its AgentTools. */
      readonly agentTools: readonly AgentTreeNode[];
      /** Sub-agents it may transfer to (LLM-driven delegation). */
      readonly children: readonly AgentTreeNode[];
    }
  | { readonly kind: 'sequential' | 'parallel'; readonly name: string; readonly children: readonly AgentTreeNode[] }
  | {
      readonly kind: 'loop';
      readonly name: string;
      /** Undefined when the loop was built without maxIterations (it runs until an agent escalates). */
      readonly maxIterations: number | undefined;
      readonly children: readonly AgentTreeNode[];
    }
  | {
      readonly kind: 'workflow';
      readonly name: string;
      /** Every node of the graph but START, in graph order. */
      readonly nodes: readonly AgentTreeNode[];
      readonly edges: readonly WorkflowEdge[];
      readonly maxConcurrency: number | undefined;
      /** A Workflow driven by a function (dynamicEntry) has no static graph. */
      readonly dynamic: boolean;
    }
  /** A join (fan-in barrier) node of a Workflow: no model call. */
  | { readonly kind: 'join'; readonly name: string }
  /** A Workflow node wrapping a tool; `inner` is the agent of an AgentTool. */
  | { readonly kind: 'tool'; readonly name: string; readonly inner: AgentTreeNode | undefined }
  /** A Workflow node running its inner node once per input item. */
  | { readonly kind: 'parallel-worker'; readonly name: string; readonly inner: AgentTreeNode }
  /** Code that declared the one node it runs once per run of its own (declareRunsNode). */
  | { readonly kind: 'wrapper'; readonly name: string; readonly className: string; readonly inner: AgentTreeNode }
  /** Code (a FunctionNode, a custom BaseAgent or node): the model calls it makes are not visible. */
  | { readonly kind: 'code'; readonly name: string; readonly className: string; readonly children: readonly AgentTreeNode[] };

export class AgentTreeError extends Error {
  override name = 'AgentTreeError';
}

/** START's name in every graph (ADK's own START node). */
const START_NAME = '__START__';

/** An AgentTool's inner agent (a private field in ADK's typings, the tool's whole point at run time). */
function innerAgentOf(tool: unknown): BaseAgent {
  return (tool as { agent: BaseAgent }).agent;
}

function className(value: object): string {
  return (value.constructor as { name?: string } | undefined)?.name || 'object';
}

/** Deeper trees are refused: walking them (and ADK running them) would overflow the stack. */
export const MAX_TREE_DEPTH = 256;

/** Reads the tree below `root` (a BaseAgent or a Workflow). */
export function walkAgentTree(root: RunnableRoot): AgentTreeNode {
  if (!brands.isRunnableRoot(root)) throw new AgentTreeError('the root is neither an ADK BaseAgent nor a Workflow');
  return walk(root, []);
}

function walk(node: BaseNode | BaseAgent, ancestors: readonly object[]): AgentTreeNode {
  if (ancestors.includes(node)) {
    throw new AgentTreeError(`"${node.name}" contains itself (through an AgentTool or a sub-agent)`);
  }
  if (ancestors.length >= MAX_TREE_DEPTH) throw new AgentTreeError(`"${node.name}" is nested deeper than ${MAX_TREE_DEPTH} levels`);
  const below = [...ancestors, node];
  const subAgents = (agent: BaseAgent) => agent.subAgents.map((child) => walk(child, below));
  if (brands.isLlmAgent(node)) {
    const agentTools = node.tools.filter(brands.isAgentTool).map((tool) => walk(innerAgentOf(tool), below));
    return { kind: 'llm', name: node.name, agent: node, toolCount: node.tools.length, agentTools, children: subAgents(node) };
  }
  if (brands.isLoopAgent(node)) {
    const max = node.maxIterations;
    return { kind: 'loop', name: node.name, maxIterations: Number.isSafeInteger(max) && max < Number.MAX_SAFE_INTEGER ? max : undefined, children: subAgents(node) };
  }
  if (brands.isParallelAgent(node)) return { kind: 'parallel', name: node.name, children: subAgents(node) };
  if (brands.isSequentialAgent(node)) return { kind: 'sequential', name: node.name, children: subAgents(node) };
  if (brands.isWorkflow(node)) {
    const graph = node.graph;
    const nodes = (graph?.nodes ?? []).filter((n) => n.name !== START_NAME).map((n) => walk(n, below));
    const edges = (graph?.edges ?? []).map((e) => ({
      from: e.fromNode.name,
      to: e.toNode.name,
      route: e.route === null || e.route === undefined ? null : (Array.isArray(e.route) ? e.route : [e.route]).map(String).join('|'),
    }));
    return { kind: 'workflow', name: node.name, nodes, edges, maxConcurrency: node.maxConcurrency, dynamic: graph === undefined };
  }
  const declared = declaredInnerNode(node);
  if (declared) return { kind: 'wrapper', name: node.name, className: className(node), inner: walk(declared, below) };
  if (brands.isBaseAgent(node)) return { kind: 'code', name: node.name, className: className(node), children: subAgents(node) };
  // Workflow node classes have no brand check of their own: recognised by their fields.
  if (node.requiresAllPredecessors) return { kind: 'join', name: node.name };
  const fields = node as unknown as { tool?: unknown; inner?: unknown };
  if (fields.tool !== undefined) {
    const tool = fields.tool;
    return { kind: 'tool', name: node.name, inner: brands.isAgentTool(tool) ? walk(innerAgentOf(tool), below) : undefined };
  }
  if (fields.inner !== undefined && typeof fields.inner === 'object' && fields.inner !== null) {
    return { kind: 'parallel-worker', name: node.name, inner: walk(fields.inner as BaseNode, below) };
  }
  return { kind: 'code', name: node.name, className: className(node), children: [] };
}

/** The node's children in the tree (what a printer or a visitor descends into). */
export function childrenOf(node: AgentTreeNode): readonly AgentTreeNode[] {
  switch (node.kind) {
    case 'llm':
      return [...node.agentTools, ...node.children];
    case 'workflow':
      return node.nodes;
    case 'tool':
      return node.inner ? [node.inner] : [];
    case 'parallel-worker':
    case 'wrapper':
      return [node.inner];
    case 'join':
      return [];
    default:
      return node.children;
  }
}

/** Every LlmAgent of the tree once, AgentTool inner agents included, in walk order. */
export function llmAgentsOf(tree: AgentTreeNode): LlmAgent[] {
  const found = new Set<LlmAgent>();
  const visit = (node: AgentTreeNode) => {
    if (node.kind === 'llm') found.add(node.agent);
    for (const child of childrenOf(node)) visit(child);
  };
  visit(tree);
  return [...found];
}

/**
 * Names of the LlmAgents that author events of a run of the tree itself, once each, in
 * walk order. AgentTool inner agents run in an invocation of their own and are left out.
 */
export function eventAuthorsOf(tree: AgentTreeNode): string[] {
  const names = new Set<string>();
  const visit = (node: AgentTreeNode) => {
    if (node.kind === 'llm') {
      names.add(node.name);
      for (const child of node.children) visit(child);
      return;
    }
    if (node.kind === 'tool') return;
    for (const child of childrenOf(node)) visit(child);
  };
  visit(tree);
  return [...names];
}
