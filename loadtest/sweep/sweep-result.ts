// What a finished search found, from its steps: the knee (the highest rate that met every
// criterion) with a ± from its repeated steps, and the saturated served rate (the most a
// step that lost requests served). Pure.
import type { SearchDecision } from './search.ts';

/** What the result reads of a step. */
export interface ResultStep {
  readonly perMinute: number;
  readonly servedPerMinute: number;
  readonly check: { readonly ok: boolean; readonly lostTooMany: boolean };
}

export interface Knee {
  /** The offered rate, user requests per minute. */
  readonly perMinute: number;
  /** Mean served per minute over its steps, and their sample standard deviation (0 with one step). */
  readonly servedPerMinute: number;
  readonly plusMinus: number;
  /** Steps at the knee's rate, and how many met every criterion. */
  readonly steps: number;
  readonly passed: number;
}

export interface SweepFindings {
  readonly knee: Knee | undefined;
  /** The most served per minute by a step that lost more than allowed; undefined when none did. */
  readonly saturatedPerMinute: number | undefined;
  /** Where the search left the knee: the highest passing rate and the lowest rate that cannot pass (undefined when none failed). */
  readonly bracket: { readonly low: number; readonly high: number | undefined };
  readonly reason: string;
}

/** Mean and sample standard deviation. */
export function meanAndSpread(values: readonly number[]): { mean: number; sd: number } {
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const sd = values.length > 1 ? Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1)) : 0;
  return { mean, sd };
}

export function sweepFindings(steps: readonly ResultStep[], done: Extract<SearchDecision, { kind: 'done' }>): SweepFindings {
  const saturated = steps.filter((s) => s.check.lostTooMany).map((s) => s.servedPerMinute);
  const saturatedPerMinute = saturated.length ? Math.max(...saturated) : undefined;
  const bracket = done.bracket;
  if (done.knee === undefined) return { knee: undefined, saturatedPerMinute, bracket, reason: done.reason };
  const at = steps.filter((s) => s.perMinute === done.knee);
  const { mean, sd } = meanAndSpread(at.map((s) => s.servedPerMinute));
  return {
    knee: { perMinute: done.knee, servedPerMinute: mean, plusMinus: sd, steps: at.length, passed: at.filter((s) => s.check.ok).length },
    saturatedPerMinute,
    bracket,
    reason: done.reason,
  };
}
