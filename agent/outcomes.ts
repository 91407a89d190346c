// Branch outcomes read from ADK's events. A model error does not throw out of runAsync:
// ADK turns it into an error event authored by the failing agent and lets the siblings
// run on, so the only place a branch's fate shows is its events.
import { type Event, isFinalResponse } from '@google/adk';
import { type BranchOutcome, effectiveErrorCode, outcomeOfErrorCode } from '../instrumentation/errors.ts';

export { BRANCH_OUTCOMES, type BranchOutcome, effectiveErrorCode, outcomeOfErrorCode } from '../instrumentation/errors.ts';

export interface BranchResult {
  name: string;
  /** `missing` when the branch produced neither a final answer nor an error. */
  outcome: BranchOutcome | 'missing';
  errorCode?: string;
  errorMessage?: string;
}

/**
 * Folds a run's events into one result per branch. An error wins over an earlier final
 * response of the same author (an agent that answered, called a tool, then failed did
 * fail); a branch without any event is `missing`.
 */
export function collectBranchOutcomes(events: readonly Event[], branches: readonly string[]): BranchResult[] {
  const results = new Map<string, BranchResult>(branches.map((name) => [name, { name, outcome: 'missing' }]));
  for (const event of events) {
    const result = event.author ? results.get(event.author) : undefined;
    if (!result) continue;
    if (event.errorCode !== undefined) {
      const code = effectiveErrorCode(String(event.errorCode), event.errorMessage);
      result.outcome = outcomeOfErrorCode(code);
      result.errorCode = code;
      result.errorMessage = event.errorMessage;
    } else if (result.outcome === 'missing' && !event.partial && isFinalResponse(event)) {
      result.outcome = 'ok';
    }
  }
  return [...results.values()];
}

/**
 * A branch that left no event (e.g. its Workflow guard swallowed the failure, or ADK
 * rethrew a sibling's non-Error and the run ended early) may still have a limiter report
 * for its failed call: use that instead of calling it merely missing.
 */
export function fillMissingFromCallReports(
  results: BranchResult[],
  reports: readonly { agent: string; outcome: string }[],
): BranchResult[] {
  for (const result of results) {
    if (result.outcome !== 'missing') continue;
    const failed = reports.filter((r) => r.agent === result.name && r.outcome !== 'ok').at(-1);
    if (!failed) continue;
    result.outcome = failed.outcome === 'timeout' ? 'timeout' : failed.outcome === 'rate_limited' ? 'rate_limited' : 'error';
  }
  return results;
}
