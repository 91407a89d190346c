// What a target serves, checked before a run starts: a scenario that calls a tree (native
// protocol) or an app (ADK protocol) its target does not serve would only collect 404s.
// Native targets list their trees at GET /v1/agents (the agent service, `serve`); ADK API
// servers list their apps at GET {basePath}/list-apps.
import { z } from 'zod';
import { fetchAgentShapes } from '../measure/agent-shapes.ts';
import { scenarioTrees } from '../scenario/trees.ts';
import type { ScenarioFile } from '../scenario/types.ts';

/** A scenario that asks for something its target does not serve (a usage error: exit 2). */
export class UnservedTreeError extends Error {
  override name = 'UnservedTreeError';
}

const adkListing = z.array(z.string());

/** Throws naming the first of `wanted` that `served` lacks, and what is served. */
export function checkServed(wanted: readonly string[], served: readonly string[], what: 'tree' | 'app', server: string): void {
  const missing = wanted.find((name) => !served.includes(name));
  if (missing === undefined) return;
  const listing = served.length > 0 ? served.map((s) => `"${s}"`).join(', ') : 'nothing';
  throw new UnservedTreeError(`unknown ${what} "${missing}": ${server} serves ${listing}`);
}

async function getJson(url: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new UnservedTreeError(`GET ${url} failed (${(error as Error).message}): is the server running?`);
  }
  if (!res.ok) throw new UnservedTreeError(`GET ${url} answered ${res.status}: is this the right server?`);
  return res.json().catch(() => undefined);
}

/** The trees (native: GET /v1/agents, as plan vs measured reads it) or apps (adk) the server at `target` lists. */
export async function servedBy(target: string, scenario: ScenarioFile): Promise<string[]> {
  const base = target.replace(/\/$/, '');
  if (scenario.protocol === 'adk') {
    const url = `${base}${scenario.adk?.basePath ?? ''}/list-apps`;
    const parsed = adkListing.safeParse(await getJson(url));
    if (!parsed.success) throw new UnservedTreeError(`GET ${url} did not answer a list of app names: is this an ADK API server?`);
    return parsed.data;
  }
  try {
    return Object.keys(await fetchAgentShapes(base));
  } catch (error) {
    const why = (error as Error).message.split('\n')[0];
    throw new UnservedTreeError(`GET ${base}/v1/agents failed (${why}): is a quotascope agent service or serve running there?`);
  }
}

/** Checks that every target serves what the scenario calls; throws an UnservedTreeError. */
export async function checkTargetsServe(targets: readonly string[], scenario: ScenarioFile): Promise<void> {
  const adk = scenario.protocol === 'adk';
  const wanted = adk ? [scenario.adk?.app ?? ''] : scenarioTrees(scenario);
  for (const target of targets) checkServed(wanted, await servedBy(target, scenario), adk ? 'app' : 'tree', target);
}
