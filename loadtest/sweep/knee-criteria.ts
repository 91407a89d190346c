// Whether a sweep step counts toward the knee: everything offered served (at most 1 % shed,
// failed or cut off), partial requests at most --max-partial, the served requests' p95
// within the SLO, and no 429 from the provider. Pure.

export interface KneeCriteria {
  /** Percent of the offered requests a step may leave unserved (shed, failed, cut off). */
  readonly maxLostPercent: number;
  /** Percent of the offered requests that may end partial. */
  readonly maxPartialPercent: number;
  /** The served requests' p95 must be at most this, s. */
  readonly sloP95Seconds: number;
}

/** What a step measured that the criteria read. */
export interface StepOutcome {
  readonly started: number;
  readonly served: number;
  readonly lostPercent: number;
  readonly partialPercent: number;
  readonly servedP95Seconds: number | undefined;
  readonly provider429s: number;
}

export interface KneeCheck {
  readonly ok: boolean;
  /** It lost more requests than allowed (the search caps its bracket at what it served). */
  readonly lostTooMany: boolean;
  /** Why it failed, one phrase each (empty when ok). */
  readonly why: readonly string[];
}

export function kneeCheck(s: StepOutcome, c: KneeCriteria): KneeCheck {
  const why: string[] = [];
  if (s.started === 0 || s.served === 0) why.push('no request served');
  const lostTooMany = s.lostPercent > c.maxLostPercent;
  if (lostTooMany) why.push(`${s.lostPercent.toFixed(1)} % not served > ${c.maxLostPercent} %`);
  if (s.partialPercent > c.maxPartialPercent) why.push(`${s.partialPercent.toFixed(1)} % partial > ${c.maxPartialPercent} %`);
  if (s.servedP95Seconds !== undefined && s.servedP95Seconds > c.sloP95Seconds) why.push(`p95 ${s.servedP95Seconds.toFixed(1)} s > SLO ${c.sloP95Seconds} s`);
  if (s.provider429s > 0) why.push(`${s.provider429s} provider 429s`);
  return { ok: why.length === 0, lostTooMany, why };
}
