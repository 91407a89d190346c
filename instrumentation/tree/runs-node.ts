// A code node (a FunctionNode, a custom BaseNode) hides the model calls it makes from the
// count. One that runs a single node once per run of its own can say so: the walk then
// sees that node inside it (kind `wrapper`), and the count counts it. The mark is keyed by
// Symbol.for, so a tree built against another copy of this library is read the same way.
import type { BaseNode } from '@google/adk';

const RUNS_NODE = Symbol.for('quotascope.tree.runsNode');

/** Marks `node` as running `inner` once each time it runs (a guard around an agent, say); returns `node`. */
export function declareRunsNode<T extends BaseNode>(node: T, inner: BaseNode): T {
  Object.defineProperty(node, RUNS_NODE, { value: inner, enumerable: false });
  return node;
}

/** The node `node` declared it runs once per run, if it did. */
export function declaredInnerNode(node: object): BaseNode | undefined {
  const inner = (node as Record<symbol, unknown>)[RUNS_NODE];
  return typeof inner === 'object' && inner !== null ? (inner as BaseNode) : undefined;
}
