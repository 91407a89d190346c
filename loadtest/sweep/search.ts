// The sweep's search over offered rates, pure: from the steps measured so far, the next rate
// to probe or the end. It doubles from a low rate until a step fails the knee's criteria,
// then bisects between the highest passing rate and the lowest failing one (a failing step
// that shed caps the bracket at what it served, plus the shed allowed), and finally repeats
// the knee's rate for a ± of what it serves.

/** What the search needs of one measured step. */
export interface SearchStep {
  readonly perMinute: number;
  /** It met every knee criterion. */
  readonly ok: boolean;
  /** Whole requests served per minute. */
  readonly servedPerMinute: number;
  /** It failed because requests were not served (shed, failed, cut off), not for latency or partials. */
  readonly lostTooMany: boolean;
  /** A repeat of the knee's rate (not a search step). */
  readonly repeat: boolean;
}

export interface SearchOptions {
  /** The first rate probed, per minute. */
  readonly startPerMinute: number;
  /** Never probe above this rate. */
  readonly maxPerMinute: number;
  /** Never probe below this rate (a tree failing even there has no knee). */
  readonly minPerMinute: number;
  /** Stop bisecting when (high - low) / low is at most this. */
  readonly resolution: number;
  /** Search steps at most (repeats aside). */
  readonly maxSearchSteps: number;
  /** Extra steps at the knee's rate, for its ±. */
  readonly repeats: number;
  /** Share of the offered requests a knee step may leave unserved (0.01 = 1 %). */
  readonly maxLostShare: number;
}

export type SearchPhase = 'double' | 'bisect' | 'repeat';

export type SearchDecision =
  | { readonly kind: 'probe'; readonly perMinute: number; readonly phase: SearchPhase }
  | {
      readonly kind: 'done';
      /** The highest passing rate, per minute; undefined when no probed rate passed. */
      readonly knee: number | undefined;
      /** The bracket the knee lies in: the knee and the lowest failing rate (capped by what it served), when one failed. */
      readonly bracket: { readonly low: number; readonly high: number | undefined };
      readonly reason: string;
    };

/** Rates are probed to a tenth of a request per minute. */
export const roundRate = (perMinute: number): number => Math.round(perMinute * 10) / 10;

/** The bracket the search steps give: the highest passing rate below the lowest failing one, and that failing rate capped by what shedding steps served. */
export function bracketOf(steps: readonly SearchStep[], maxLostShare: number): { low: number | undefined; high: number | undefined } {
  const search = steps.filter((s) => !s.repeat);
  const failing = search.filter((s) => !s.ok);
  let high = failing.length ? Math.min(...failing.map((s) => s.perMinute)) : undefined;
  const passing = search.filter((s) => s.ok && (high === undefined || s.perMinute < high));
  const low = passing.length ? Math.max(...passing.map((s) => s.perMinute)) : undefined;
  // A step that lost requests served what the tree sustains: a rate above that plus the allowed loss cannot pass.
  for (const s of failing) {
    if (s.lostTooMany && high !== undefined) high = Math.min(high, roundRate(s.servedPerMinute * (1 + maxLostShare)));
  }
  if (high !== undefined && low !== undefined && high < low) high = low;
  return { low, high };
}

/** The next rate to probe after `steps`, or the end of the search. */
export function nextStep(steps: readonly SearchStep[], o: SearchOptions): SearchDecision {
  const search = steps.filter((s) => !s.repeat);
  const repeats = steps.filter((s) => s.repeat).length;
  const { low, high } = bracketOf(steps, o.maxLostShare);
  const done = (reason: string): SearchDecision => ({ kind: 'done', knee: low, bracket: { low: low ?? 0, high }, reason });
  const repeatOrDone = (reason: string): SearchDecision =>
    low !== undefined && repeats < o.repeats ? { kind: 'probe', perMinute: low, phase: 'repeat' } : done(reason);
  if (search.length === 0) return { kind: 'probe', perMinute: roundRate(Math.min(o.maxPerMinute, Math.max(o.minPerMinute, o.startPerMinute))), phase: 'double' };
  if (high === undefined) {
    // Nothing failed yet: double, up to the ceiling.
    const last = search[search.length - 1] as SearchStep;
    if (last.perMinute >= o.maxPerMinute) return repeatOrDone(`every rate up to the ceiling of ${o.maxPerMinute}/min passed`);
    if (search.length >= o.maxSearchSteps) return repeatOrDone(`no rate failed in ${search.length} steps`);
    return { kind: 'probe', perMinute: roundRate(Math.min(o.maxPerMinute, last.perMinute * 2)), phase: 'double' };
  }
  if (low === undefined) {
    // Nothing passed yet: halve below the lowest failing rate, down to the floor.
    const next = roundRate(high / 2);
    if (next < o.minPerMinute || search.length >= o.maxSearchSteps) return done(`no rate passed, down to ${Math.min(...search.map((s) => s.perMinute))}/min`);
    return { kind: 'probe', perMinute: next, phase: 'bisect' };
  }
  if ((high - low) / low <= o.resolution) return repeatOrDone(`bracketed within ${(o.resolution * 100).toFixed(0)} %`);
  if (search.length >= o.maxSearchSteps) return repeatOrDone(`the step limit (${o.maxSearchSteps}) ended the bisection`);
  const middle = roundRate((low + high) / 2);
  if (middle <= low || middle >= high) return repeatOrDone('the bracket is as narrow as the rates are fine');
  return { kind: 'probe', perMinute: middle, phase: 'bisect' };
}
