// The agent service's trees' shapes as GET /v1/agents publishes them: what the planner is
// told about the tree a steady phase calls.
import { z } from 'zod';
import { TREE_SHAPES, type TreeShape } from '../../agent/tree-shapes.ts';
import { query } from './prometheus-client.ts';

/** One model's share of a tree's calls, and the limiter they go through. */
export interface ModelShape {
  readonly model: string;
  readonly limiter?: string;
  readonly modelCallsPerRequest: number;
  readonly shape: TreeShape;
}

/** A tree's shape, with each model's share where the agent publishes it. */
export type AgentShape = TreeShape & { readonly models?: readonly ModelShape[] };

/** Tree name → its shape, or null where its model calls per request are not fixed. */
export type AgentShapes = Readonly<Record<string, AgentShape | null>>;

/** The built-in agent service's shapes (the table it publishes). */
export const BUILT_IN_SHAPES: AgentShapes = TREE_SHAPES;

const count = z.number().int().min(0).max(10_000);
const shapeSchema = z
  .object({ parallelBranches: count, callsPerBranch: count, sequentialSteps: count, branchOutputsPerStep: z.number().min(0).max(100).optional() })
  .nullable();
const modelSchema = z.object({
  model: z.string().min(1).max(200),
  limiter: z.string().min(1).max(200).optional(),
  modelCallsPerRequest: count,
  shape: shapeSchema.unwrap(),
});
const agentsSchema = z.object({
  agents: z.array(z.object({ name: z.string().min(1), modelCallsPerRequest: count.nullable(), shape: shapeSchema, models: z.array(modelSchema).max(1000).optional() })),
});

/** GET {agentUrl}/v1/agents, validated. */
export async function fetchAgentShapes(agentUrl: string): Promise<AgentShapes> {
  const url = `${agentUrl.replace(/\/$/, '')}/v1/agents`;
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`agent service at ${url} answered ${res.status}`);
  const parsed = agentsSchema.safeParse(await res.json());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`agent service at ${url}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return Object.fromEntries(parsed.data.agents.map((a) => [a.name, a.shape && a.models ? { ...a.shape, models: a.models } : a.shape]));
}

/** The base URL of one agent replica that Prometheus scrapes under `job` (its instance label). */
export async function scrapedAgentUrl(prometheusUrl: string, job: string): Promise<string | undefined> {
  const [first] = await query(prometheusUrl, `up{job="${job}"}`);
  return first?.metric.instance ? `http://${first.metric.instance}` : undefined;
}
