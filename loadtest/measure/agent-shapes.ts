// The agent service's trees' shapes as GET /v1/agents publishes them: what the planner is
// told about the tree a steady phase calls. The wire schema is the publisher's (agent/tree-shapes.ts).
import { sampleTreeShapes } from '../../agent/sample-shapes.ts';
import { type PublishedModel, publishedAgentListSchema, type TreeShape } from '../../agent/tree-shapes.ts';
import { jobs } from '../../dashboards/config.ts';
import { query } from './prometheus-client.ts';

/** One model's share of a tree's calls, and the limiter they go through. */
export type ModelShape = Readonly<PublishedModel>;

/** A tree's shape, with each model's share where the agent publishes it. */
export type AgentShape = TreeShape & { readonly models?: readonly ModelShape[] };

/** Tree name → its shape, or null where its model calls per request are not fixed. */
export type AgentShapes = Readonly<Record<string, AgentShape | null>>;

/** The built-in agent service's shapes (what it publishes: its trees, counted). */
export const BUILT_IN_SHAPES: AgentShapes = sampleTreeShapes();

/** GET {agentUrl}/v1/agents, validated. */
export async function fetchAgentShapes(agentUrl: string): Promise<AgentShapes> {
  const url = `${agentUrl.replace(/\/$/, '')}/v1/agents`;
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`agent service at ${url} answered ${res.status}`);
  const parsed = publishedAgentListSchema.safeParse(await res.json());
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

/**
 * The published shapes of the agent service a run called (`agentUrl`, else a replica that
 * Prometheus scrapes under the agent job), or why they cannot be read.
 */
export async function publishedShapes(prometheusUrl: string, agentUrl: string | undefined): Promise<AgentShapes | { skipped: string }> {
  let url: string | undefined;
  try {
    url = agentUrl ?? (await scrapedAgentUrl(prometheusUrl, jobs.agent));
  } catch (e) {
    return { skipped: cannotRead(e) };
  }
  if (!url) return { skipped: `Prometheus at ${prometheusUrl} scrapes no agent service (job ${jobs.agent}) to read the trees' shapes from` };
  return shapesAt(url);
}

const cannotRead = (e: unknown) => `cannot read the agent service's trees: ${(e as Error).message}`;

/** The published shapes of the agent replica at `agentUrl`, or why they cannot be read. */
export async function shapesAt(agentUrl: string): Promise<AgentShapes | { skipped: string }> {
  try {
    return await fetchAgentShapes(agentUrl);
  } catch (e) {
    return { skipped: cannotRead(e) };
  }
}
