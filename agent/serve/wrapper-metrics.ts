// The limiter metrics of models the user wrapped themselves. A module whose models are
// already RateLimitedLlm (recognised by brand, from any copy of quotascope) registered their
// metrics with its own prom-client registry, often another copy's global one, which serve's
// registry does not hold. serve's /metrics adds their llm_limiter_* families: a family serve's
// own limiters also export gets the other registry's samples under its one HELP and TYPE.
import type { LlmAgent } from '@google/adk';
import { isRateLimitedLlm, limiterMetrics } from '../../instrumentation/index.ts';

/** What serve needs of a registry of any prom-client copy. */
export interface TextRegistry {
  metrics(): Promise<string>;
}

/** The limiter metric families, by name (what is taken from another registry). */
const LIMITER_FAMILIES: ReadonlySet<string> = new Set(Object.values(limiterMetrics).map((d) => d.name));

/** The registries the user's own wrappers report to, other than `own` (each once). */
export function wrapperRegistries(agents: readonly LlmAgent[], own: unknown): TextRegistry[] {
  const found = new Set<TextRegistry>();
  for (const agent of agents) {
    const model = agent.model;
    if (!isRateLimitedLlm(model)) continue;
    const registry = (model as { metrics?: { registry?: unknown } }).metrics?.registry;
    if (registry !== own && typeof (registry as TextRegistry | undefined)?.metrics === 'function') found.add(registry as TextRegistry);
  }
  return [...found];
}

interface Family {
  readonly name: string;
  readonly header: string[];
  readonly samples: string[];
}

/** The exposition text as families, in order (comments other than HELP/TYPE and OpenMetrics' EOF dropped). */
function familiesOf(text: string): Family[] {
  const families: Family[] = [];
  let current: Family | undefined;
  for (const line of text.split('\n')) {
    if (line === '' || line === '# EOF') continue;
    const meta = /^# (HELP|TYPE|UNIT) (\S+)/.exec(line);
    if (meta) {
      if (current?.name !== meta[2]) {
        current = { name: meta[2], header: [], samples: [] };
        families.push(current);
      }
      current.header.push(line);
      continue;
    }
    if (line.startsWith('#')) continue;
    // An exemplar (OpenMetrics) after ` # {` stays with its own registry's format.
    current?.samples.push(line.replace(/ # \{.*$/, ''));
  }
  return families;
}

/** `own` (serve's registry text) with the limiter families of `others` added in. */
export function mergeLimiterFamilies(own: string, others: readonly string[]): string {
  const families = familiesOf(own);
  const byName = new Map(families.map((f) => [f.name, f]));
  for (const text of others) {
    for (const family of familiesOf(text)) {
      // OpenMetrics names a counter family without its _total.
      if (!LIMITER_FAMILIES.has(family.name) && !LIMITER_FAMILIES.has(`${family.name}_total`)) continue;
      const existing = byName.get(family.name);
      if (existing) {
        const seen = new Set(existing.samples);
        existing.samples.push(...family.samples.filter((s) => !seen.has(s)));
      } else {
        const copy = { name: family.name, header: [...family.header], samples: [...family.samples] };
        families.push(copy);
        byName.set(copy.name, copy);
      }
    }
  }
  return `${families.map((f) => [...f.header, ...f.samples].join('\n')).join('\n')}\n`;
}
