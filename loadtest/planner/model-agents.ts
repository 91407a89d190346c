// Which agents call which model, from a counted tree: what a fix for one model's quota means
// in the tree (an AgentTool's agent calls its own model; transfer targets are not counted).
import type { CountedNode } from '../../instrumentation/tree/tree-count.ts';
import { agentToolCalls } from './tree-format.ts';

/** The model an LlmAgent's own calls go to: its own, else (inherited) the one its calls are counted under. */
function ownModel(node: CountedNode): string | undefined {
  if (node.model !== undefined && node.model !== 'inherited') return node.model;
  const byTools = new Map(agentToolCalls(node));
  const own = 1 + (node.turns ?? 0);
  return Object.entries(node.models).find(([model, count]) => count.calls - (byTools.get(model) ?? 0) >= own)?.[0];
}

/** Model → the names of the agents that call it, in tree order, each once. */
export function agentsByModel(root: CountedNode): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const visit = (node: CountedNode) => {
    if (node.role === 'transfer-target') return;
    if (node.kind === 'llm') {
      const model = ownModel(node);
      if (model !== undefined) {
        const names = out[model] ?? [];
        if (!names.includes(node.name)) names.push(node.name);
        out[model] = names;
      }
    }
    for (const child of node.children) visit(child);
  };
  visit(root);
  return out;
}
