// The run's verdict in one line, the first thing the console summary and the report show:
// does the tree fit its quota at the tested demand, what became of every request it started
// (served, partial, shed, failed, unfinished), and the planner's best fix when it does not fit.
// Partial requests the limiter cut (its timeouts, a shared budget failing closed) are named
// as the limiter's, not held against the tree's fit.
import type { RequestCounts } from '../k6/request-status.ts';
import { formatRequestCounts } from '../k6/summary-text.ts';
import type { PlanVsMeasured } from '../measure/plan-vs-measured.ts';
import { type QuotaChangeIn, quotaCutsLine } from './quota-cuts.ts';

/** What can leave an admitted request partial, as the run counted it. */
export interface PartialCauses {
  /** The limiters' timeouts by reason (llm_limiter_timeouts_total): calls the limiter did not start. */
  timeoutsByReason?: Record<string, number>;
  /** Branch outcomes by kind (k6): timeout and budget_unavailable are the limiter's, error and rate_limited the provider's. */
  branchOutcomes?: Record<string, number>;
  /** The HTTP status each user request ended with (k6): a failed request answered 2xx lost every branch. */
  statusCodes?: Record<string, number>;
}

export interface VerdictInput {
  /** Every started request by how it ended (the k6 summary's outcomes); undefined when no client summary exists. */
  outcomes: RequestCounts | undefined;
  /** 429s the provider answered during the run (undefined when unknown). */
  providerRateLimited: number | undefined;
  /** Plan vs measured, or why it was skipped. */
  planVsMeasured: PlanVsMeasured | { skipped: string } | undefined;
  /** The provider's quota changes during the run (undefined when unknown). */
  quotaChanges?: readonly QuotaChangeIn[];
  /** Why requests ended partial, where the run counted it. */
  causes?: PartialCauses;
}

export interface Verdict {
  /** True: fits; false: does not; undefined: the run cannot say. */
  fits: boolean | undefined;
  line: string;
}

const rate = (n: number): string => String(Number(n.toFixed(1)));

/** Branch outcomes the limiter causes (it did not start the call) and those the provider causes (it failed the call after retries). */
const LIMITER_BRANCH_OUTCOMES = ['timeout', 'budget_unavailable'] as const;
const PROVIDER_BRANCH_OUTCOMES = ['error', 'rate_limited'] as const;

const positive = (counts: Record<string, number> | undefined): [string, number][] => Object.entries(counts ?? {}).filter(([, n]) => n > 0);

/**
 * The limiter's part in the partial requests: the reasons it gave (`request_deadline 17 timeouts`,
 * `budget_unavailable 2 branches`), and whether every partial request is its doing (no branch
 * failed at the provider). Undefined when the limiter cut nothing.
 */
export function limiterPartial(causes: PartialCauses | undefined): { reasons: string; all: boolean } | undefined {
  const timeouts = positive(causes?.timeoutsByReason).map(([reason, n]) => `${reason} ${n} timeout${n === 1 ? '' : 's'}`);
  const unavailable = positive(causes?.branchOutcomes).filter(([o]) => o === 'budget_unavailable');
  const reasons = [...timeouts, ...unavailable.map(([o, n]) => `${o} ${n} branch${n === 1 ? '' : 'es'}`)];
  const limiterBranches = positive(causes?.branchOutcomes).filter(([o]) => (LIMITER_BRANCH_OUTCOMES as readonly string[]).includes(o));
  if (reasons.length === 0 && limiterBranches.length === 0) return undefined;
  const providerBranches = positive(causes?.branchOutcomes).filter(([o]) => (PROVIDER_BRANCH_OUTCOMES as readonly string[]).includes(o));
  return { reasons: reasons.length > 0 ? reasons.join(', ') : limiterBranches.map(([o, n]) => `${o} ${n} branches`).join(', '), all: providerBranches.length === 0 };
}

/**
 * The verdict. It fits when the plan says the demand fits the budget (where a plan was made)
 * and the run agrees: no request shed at the steady rate (sheds before it, in an opening burst
 * on cold limiters, are named apart), none partial or failed, and no provider 429. Partial
 * requests that only the limiter cut say so and do not count against the tree. Unfinished
 * requests (cut off by the run's end) are counted, not judged.
 */
export function runVerdict(v: VerdictInput): Verdict {
  const compared = v.planVsMeasured && 'planned' in v.planVsMeasured ? v.planVsMeasured : undefined;
  const planned = compared?.planned;
  const c = v.outcomes;
  if (!c) return { fits: undefined, line: 'verdict: unknown: the run has no count of its requests (no k6 summary)' };
  const started = c.served + c.partial + c.shed + c.failed + c.unfinished;
  if (started === 0) return { fits: undefined, line: 'verdict: unknown: the run started no request' };
  const limiter = c.partial > 0 || c.failed > 0 ? limiterPartial(v.causes) : undefined;
  // Failed requests answered 2xx lost every branch: the limiter's when no branch failed at the provider.
  const answered2xx = Object.entries(v.causes?.statusCodes ?? {}).reduce((n, [status, count]) => n + (status.startsWith('2') ? count : 0), 0);
  const failedByLimiter = limiter?.all ? Math.min(c.failed, Math.max(0, answered2xx - c.served - c.partial)) : 0;
  // Fit is judged at the steady rate: when none was shed in the steady window, the sheds
  // before it (an opening burst on cold limiters, larger than a window funds at once; the
  // warm-up) are told apart, not held against the tree.
  const steady = compared?.steadyRequests;
  const shedBefore = steady?.shed === 0 ? c.shed : 0;
  const problems: string[] = [];
  if (c.shed - shedBefore > 0) problems.push(`${c.shed} shed`);
  if (c.partial > 0 && !limiter?.all) problems.push(`${c.partial} partial`);
  if (c.failed - failedByLimiter > 0) problems.push(`${c.failed - failedByLimiter} failed`);
  if (v.providerRateLimited) problems.push(`${v.providerRateLimited} provider 429s`);
  const fits = (planned?.fits ?? true) && problems.length === 0;
  const demand = planned ? ` at ${rate(planned.demandUserRequestsPerMinute)} user requests/min` : ' at the tested demand';
  const parts = [
    fits
      ? `verdict: the tree fits its quota${demand}`
      : `verdict: the tree does NOT fit its quota${demand}${planned && !planned.fits ? ` (${compared?.forwardRun ? 'its forward run through the door serves' : 'the budget sustains'} ${rate(planned.sustainedUserRequestsPerMinute)})` : ''}`,
    `${formatRequestCounts(c)} of ${started} requests${v.providerRateLimited ? `; ${v.providerRateLimited} provider 429s` : ''}`,
  ];
  if (shedBefore > 0) {
    const what = steady?.before ? `${steady.before} on cold limiters, more than a window funds at once, and the warm-up` : 'the warm-up, on cold limiters';
    parts.push(`the ${shedBefore} shed came before the steady window (${what}): none at the steady rate`);
  }
  const cuts = quotaCutsLine(v.quotaChanges ?? []);
  if (cuts) parts.push(cuts);
  if (limiter?.all && c.partial + failedByLimiter > 0) {
    const cut = [
      ...(c.partial > 0 ? [`${c.partial} partial`] : []),
      ...(failedByLimiter > 0 ? [`${failedByLimiter} failed (every branch cut)`] : []),
    ].join(' and ');
    parts.push(`${cut} request${c.partial + failedByLimiter === 1 ? '' : 's'} came from the limiter (${limiter.reasons}), not from the tree's fit`);
  } else if (limiter && !limiter.all && c.partial > 0) {
    parts.push(`some of the ${c.partial} partial requests came from the limiter (${limiter.reasons}), the others from provider failures`);
  }
  if (!fits && planned?.bestFix) parts.push(`best fix: ${planned.bestFix}`);
  else if (!fits && planned?.fits) parts.push(`the plan says it fits: check the run's ${problems.join(', ')}`);
  return { fits, line: parts.join('; ') };
}
