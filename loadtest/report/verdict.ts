// The run's verdict in one line, the first thing the console summary and the report show:
// does the tree fit its quota at the tested demand, what became of every request it started
// (served, partial, shed, failed, unfinished), and the planner's best fix when it does not fit.
import type { RequestCounts } from '../k6/request-status.ts';
import { formatRequestCounts } from '../k6/summary-text.ts';
import type { PlanVsMeasured } from '../measure/plan-vs-measured.ts';
import { type QuotaChangeIn, quotaCutsLine } from './quota-cuts.ts';

export interface VerdictInput {
  /** Every started request by how it ended (the k6 summary's outcomes); undefined when no client summary exists. */
  outcomes: RequestCounts | undefined;
  /** 429s the provider answered during the run (undefined when unknown). */
  providerRateLimited: number | undefined;
  /** Plan vs measured, or why it was skipped. */
  planVsMeasured: PlanVsMeasured | { skipped: string } | undefined;
  /** The provider's quota changes during the run (undefined when unknown). */
  quotaChanges?: readonly QuotaChangeIn[];
}

export interface Verdict {
  /** True: fits; false: does not; undefined: the run cannot say. */
  fits: boolean | undefined;
  line: string;
}

const rate = (n: number): string => String(Number(n.toFixed(1)));

/**
 * The verdict. It fits when the plan says the demand fits the budget (where a plan was made)
 * and the run agrees: no request shed, partial or failed, and no provider 429. Unfinished
 * requests (cut off by the run's end) are counted, not judged.
 */
export function runVerdict(v: VerdictInput): Verdict {
  const compared = v.planVsMeasured && 'planned' in v.planVsMeasured ? v.planVsMeasured : undefined;
  const planned = compared?.planned;
  const c = v.outcomes;
  if (!c) return { fits: undefined, line: 'verdict: unknown: the run has no count of its requests (no k6 summary)' };
  const started = c.served + c.partial + c.shed + c.failed + c.unfinished;
  if (started === 0) return { fits: undefined, line: 'verdict: unknown: the run started no request' };
  const problems: string[] = [];
  if (c.shed > 0) problems.push(`${c.shed} shed`);
  if (c.partial > 0) problems.push(`${c.partial} partial`);
  if (c.failed > 0) problems.push(`${c.failed} failed`);
  if (v.providerRateLimited) problems.push(`${v.providerRateLimited} provider 429s`);
  const fits = (planned?.fits ?? true) && problems.length === 0;
  const demand = planned ? ` at ${rate(planned.demandUserRequestsPerMinute)} user requests/min` : ' at the tested demand';
  const parts = [
    fits
      ? `verdict: the tree fits its quota${demand}`
      : `verdict: the tree does NOT fit its quota${demand}${planned && !planned.fits ? ` (the budget sustains ${rate(planned.sustainedUserRequestsPerMinute)})` : ''}`,
    `${formatRequestCounts(c)} of ${started} requests${v.providerRateLimited ? `; ${v.providerRateLimited} provider 429s` : ''}`,
  ];
  const cuts = quotaCutsLine(v.quotaChanges ?? []);
  if (cuts) parts.push(cuts);
  if (!fits && planned?.bestFix) parts.push(`best fix: ${planned.bestFix}`);
  else if (!fits && planned?.fits) parts.push(`the plan says it fits: check the run's ${problems.join(', ')}`);
  return { fits, line: parts.join('; ') };
}
