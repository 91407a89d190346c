// Gives every LlmAgent of a user's tree a rate-limited model: one shared RateLimitedLlm per
// model name, around ADK's Gemini pointed at the chosen provider. Each model has its own
// provider quota (quotaScope model, Gemini's scope), so each limiter gets its own model's
// budget (tokensPerMinute per model); with quotaScope key the limiters share one budget. A model given as a name or as an ADK Gemini is replaced; one the user
// already wrapped (a RateLimitedLlm), or any other BaseLlm, is left as it is. Both are
// recognised by brand, so models built with the user's own copy of @google/adk count too. An agent
// without a model inherits its parent LlmAgent's at run time, so it needs nothing.
import type { BaseLlm, LlmAgent } from '@google/adk';
import type { Registry } from 'prom-client';
import { type Clock, realClock } from '../../instrumentation/clock.ts';
import { isRateLimitedLlm } from '../../instrumentation/index.ts';
import { isGemini } from '../../instrumentation/tree/adk-brands.ts';
import { type LimiterOptions, modelLimiterOptions } from '../config.ts';
import { createBudget, createLimiter, type Limiter, type OwnedBudget } from '../limiter.ts';
import { ProviderGemini } from '../provider-model.ts';
import { currentTrafficClass, recordCallReport } from '../run-context.ts';

export interface ProviderOptions {
  readonly providerUrl: string;
  readonly apiKey: string;
  readonly httpTimeoutMs: number;
}

export type ModelDecision =
  | { readonly agent: string; readonly action: 'wrapped'; readonly model: string; readonly limiter: string }
  | { readonly agent: string; readonly action: 'kept'; readonly reason: 'already rate-limited' | 'custom model' | 'no wrapping' }
  | { readonly agent: string; readonly action: 'inherits' };

export interface WrappedModels {
  /** One limiter per model name, keyed by that name. */
  readonly limiters: ReadonlyMap<string, Limiter>;
  /** What happened to each agent's model, in walk order. */
  readonly decisions: readonly ModelDecision[];
  close(): Promise<void>;
}

/** The model name of a model that gets wrapped, or undefined for one that stays. */
function wrappableModelName(model: LlmAgent['model']): string | undefined {
  if (typeof model === 'string') return model === '' ? undefined : model;
  if (isRateLimitedLlm(model)) return undefined;
  if (isGemini(model)) return model.model;
  return undefined;
}

/**
 * The limiter label for a model: the configured name alone when there is one model; else the
 * model's name in label characters, prefixed by the configured name unless it starts with it
 * (gemini + gemini-2.5-pro → gemini-2_5-pro; team + gemini-2.5-pro → team-gemini-2_5-pro).
 */
export function limiterNameFor(base: string, model: string, modelCount: number): string {
  if (modelCount === 1) return base;
  const slug = model.toLowerCase().replace(/[^a-z0-9_-]+/g, '_');
  return slug.startsWith(`${base}-`) ? slug : `${base}-${slug}`;
}

/** Describes what wrapping would do, without changing anything (`--no-wrap` reports this). */
export function describeModels(agents: readonly LlmAgent[]): ModelDecision[] {
  return agents.map((agent) =>
    agent.model === undefined
      ? { agent: agent.name, action: 'inherits' }
      : { agent: agent.name, action: 'kept', reason: 'no wrapping' },
  );
}

/** What the limiters wrap and wait on other than a provider over HTTP (the forward run's mock model on a manual clock). */
export interface WrapParts {
  readonly delegateFor?: (model: string) => BaseLlm;
  readonly clock?: Clock;
}

export async function wrapModels(
  agents: readonly LlmAgent[],
  limiterOptions: LimiterOptions,
  provider: ProviderOptions,
  registry: Registry,
  parts: WrapParts = {},
): Promise<WrappedModels> {
  const clock = parts.clock ?? realClock;
  const names = [...new Set(agents.map((a) => wrappableModelName(a.model)).filter((n): n is string => n !== undefined))];
  const limiters = new Map<string, Limiter>();
  let shared: OwnedBudget | undefined;
  try {
    // One quota for every model of the key: one budget (the key's), under the configured name.
    if (limiterOptions.quotaScope === 'key' && names.length > 0) shared = await createBudget(modelLimiterOptions(limiterOptions, names[0]), registry, console.error, clock);
    for (const model of names) {
      const delegate = parts.delegateFor?.(model) ?? new ProviderGemini({ ...provider, model });
      const config = modelLimiterOptions(limiterOptions, model, limiterNameFor(limiterOptions.limiterName, model, names.length));
      limiters.set(model, await createLimiter(config, delegate, registry, recordCallReport, currentTrafficClass, console.error, shared, clock));
    }
  } catch (error) {
    await Promise.allSettled([...limiters.values()].map((l) => l.close()));
    await shared?.close();
    throw error;
  }
  const decisions: ModelDecision[] = agents.map((agent) => {
    const name = wrappableModelName(agent.model);
    if (name !== undefined) {
      const limiter = limiters.get(name) as Limiter;
      agent.model = limiter.model;
      return { agent: agent.name, action: 'wrapped', model: name, limiter: limiter.model.name };
    }
    if (agent.model === undefined || agent.model === '') return { agent: agent.name, action: 'inherits' };
    return { agent: agent.name, action: 'kept', reason: isRateLimitedLlm(agent.model) ? 'already rate-limited' : 'custom model' };
  });
  return {
    limiters,
    decisions,
    async close() {
      await Promise.allSettled([...limiters.values()].map((l) => l.close()));
      await shared?.close();
    },
  };
}
