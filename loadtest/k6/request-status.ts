// How one user request ended, as k6 counts it: the HTTP status that decided it
// (qs_request_status{status}), its outcome (qs_request_outcome{outcome}: served, partial,
// shed, failed) and whether it failed (qs_request_failed). Every request also counts once
// when it starts (qs_requests_started), so the ones a run's end cut off show as unfinished.
// Pure (no k6 imports): the k6 script, the Node driver and the summary share it.
//
// k6 keeps a tag's sub-metric in its end-of-test summary only when a threshold names it, so
// the statuses a summary can report are a fixed list; any other status is counted by its
// class (`3xx`, `5xx`, …) and 0 is k6's "no response" (refused, reset, timed out).
import { ERROR_CODES } from '../../instrumentation/errors.ts';

export const REQUEST_STATUS_METRIC = 'qs_request_status';
export const REQUEST_FAILED_METRIC = 'qs_request_failed';
export const REQUEST_OUTCOME_METRIC = 'qs_request_outcome';
export const REQUESTS_STARTED_METRIC = 'qs_requests_started';
/** The durations of served requests alone (qs_request_duration also holds the instant 429s of shed ones). */
export const SERVED_DURATION_METRIC = 'qs_served_request_duration';

/**
 * How a user request that got an answer ended: served (every branch ok), partial (some
 * branch ok, some not), shed (refused whole at the door: 429 REQUEST_SHED), failed (no 2xx
 * answer, or no branch ok). A request the run's end cut off has none: it is unfinished.
 */
export const REQUEST_OUTCOMES = ['served', 'partial', 'shed', 'failed'] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];
/** Every way a started request is counted at the end of a run. */
export type RequestCounts = Record<RequestOutcome | 'unfinished', number>;

/** How the ADK protocol's `detail` of a shed request begins (FastAPI's error shape; RequestShed's text). */
export const REQUEST_SHED_DETAIL_PREFIX = 'request shed';

const LISTED_STATUSES = [0, 200, 201, 204, 400, 401, 403, 404, 405, 408, 409, 413, 415, 422, 429, 499, 500, 501, 502, 503, 504] as const;
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'other'] as const;

/** Every value the `status` tag takes. */
export const STATUS_TAGS: readonly string[] = [...LISTED_STATUSES.map(String), ...STATUS_CLASSES];

/** The `status` tag of an HTTP status: itself when listed, else its class. */
export function statusTag(status: number): string {
  if ((LISTED_STATUSES as readonly number[]).includes(status)) return String(status);
  const hundreds = Math.floor(status / 100);
  return Number.isInteger(status) && hundreds >= 1 && hundreds <= 5 ? `${hundreds}xx` : 'other';
}

export const statusSubmetric = (tag: string): string => `${REQUEST_STATUS_METRIC}{status:${tag}}`;

/**
 * A user request failed when it got no 2xx answer, or when no branch of the answer came back
 * ok (every model call of the tree failed; the native protocol still answers 200 then).
 */
export function requestFailed(status: number, branchOutcomes: readonly string[] | undefined): boolean {
  if (status < 200 || status >= 300) return true;
  return branchOutcomes === undefined || !branchOutcomes.includes('ok');
}

/**
 * Whether an answer is request admission shedding the request: HTTP 429 with
 * `{"error":{"code":"REQUEST_SHED"}}` (native) or `{"detail":"request shed: …"}` (ADK).
 */
export function isShedAnswer(status: number, body: unknown): boolean {
  if (status !== 429 || typeof body !== 'object' || body === null) return false;
  const { error, detail } = body as { error?: { code?: unknown }; detail?: unknown };
  return error?.code === ERROR_CODES.requestShed || (typeof detail === 'string' && detail.startsWith(REQUEST_SHED_DETAIL_PREFIX));
}

/**
 * The outcome of an answered request from its status, whether it was shed, its branches'
 * outcomes and how many branches are missing from the answer.
 */
export function requestOutcome(status: number, shed: boolean, branchOutcomes: readonly string[] | undefined, missingBranches = 0): RequestOutcome {
  if (shed) return 'shed';
  if (requestFailed(status, branchOutcomes)) return 'failed';
  return missingBranches > 0 || (branchOutcomes ?? []).some((o) => o !== 'ok') ? 'partial' : 'served';
}

/** Parses a response body as JSON, or undefined. */
export function jsonBody(text: string | null | undefined): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
