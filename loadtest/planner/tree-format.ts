// A counted agent tree for people: one line per node with its model calls per request.
import type { CountedNode } from '../../instrumentation/tree/tree-count.ts';

const plural = (n: number, word: string, words = `${word}s`) => `${n} ${n === 1 ? word : words}`;

function label(node: CountedNode): string {
  const kind =
    node.kind === 'llm'
      ? `LlmAgent, ${node.model}`
      : node.kind === 'loop'
        ? `loop × ${node.iterations}`
        : node.kind === 'tool'
          ? 'tool node'
          : node.kind;
  const role = node.role === 'agent-tool' ? 'AgentTool → ' : node.role === 'transfer-target' ? 'transfer target → ' : '';
  return `${role}${node.name} (${kind})`;
}

/**
 * The calls an LlmAgent's agent tools make per run of it, by the tools' own models (a tool's
 * agent calls its model, not the caller's), in first-seen order.
 */
export function agentToolCalls(node: CountedNode): [string, number][] {
  const turns = node.turns ?? 0;
  const byModel = new Map<string, number>();
  for (const tool of node.children) {
    if (tool.role !== 'agent-tool') continue;
    for (const [model, count] of Object.entries(tool.models)) byModel.set(model, (byModel.get(model) ?? 0) + count.calls * turns);
  }
  return [...byModel].filter(([, calls]) => calls > 0);
}

function figures(node: CountedNode): string {
  if (node.role === 'transfer-target') return 'not counted: runs only if the model transfers to it';
  const perUse = node.role === 'agent-tool' ? ' per use' : '';
  const runs = node.runs !== undefined && node.runs !== 1 ? ` × ${node.runs} runs` : '';
  const width = node.width > 1 ? `, up to ${node.width} at once` : '';
  const tools = node.kind === 'llm' ? agentToolCalls(node) : [];
  if (tools.length > 0) {
    // Its own calls on its model; its agent tools' calls on theirs.
    const own = 1 + (node.turns ?? 0);
    const byTools = tools.map(([model, calls]) => `${calls} on ${model}`).join(', ');
    return `${plural(own, 'call')}${perUse}${runs} + ${byTools} by its agent tools${width}`;
  }
  return `${plural(node.calls, 'call')}${perUse}${runs}${width}`;
}

/** The tree as indented lines, calls right-aligned after the names. */
export function formatCountedTree(root: CountedNode): string {
  const rows: [string, string][] = [];
  const visit = (node: CountedNode, prefix: string, childPrefix: string) => {
    rows.push([`${prefix}${label(node)}`, figures(node)]);
    node.children.forEach((child, i) => {
      const last = i === node.children.length - 1;
      visit(child, `${childPrefix}${last ? '└─ ' : '├─ '}`, `${childPrefix}${last ? '   ' : '│  '}`);
    });
  };
  visit(root, '', '');
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return `${rows.map(([left, right]) => `${left.padEnd(width)}${right}`).join('\n')}\n`;
}
