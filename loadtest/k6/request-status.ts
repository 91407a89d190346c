// How one user request ended, as k6 counts it: the HTTP status that decided it
// (qs_request_status{status}) and whether it failed (qs_request_failed). Pure (no k6
// imports): the k6 script, the Node driver and the summary share it.
//
// k6 keeps a tag's sub-metric in its end-of-test summary only when a threshold names it, so
// the statuses a summary can report are a fixed list; any other status is counted by its
// class (`3xx`, `5xx`, …) and 0 is k6's "no response" (refused, reset, timed out).

export const REQUEST_STATUS_METRIC = 'qs_request_status';
export const REQUEST_FAILED_METRIC = 'qs_request_failed';

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
