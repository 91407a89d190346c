// One user request to an ADK API server, from inside k6: create a session, then POST /run
// (or /run_sse when the scenario streams) with the user message, and read the events into
// the same metrics the native protocol feeds, plus the model calls and tokens per request.
// Then DELETE the session, so a long run does not fill the server's session store.
import http, { type Params } from 'k6/http';
import { Counter } from 'k6/metrics';
import { readRunResponse, UNKNOWN_AUTHOR } from './adk-events.ts';
import { type AdkRoutes, adkRoutes, runBody, sessionUrl } from './adk-request.ts';
import { isShedAnswer, jsonBody, type RequestOutcome, requestOutcome, statusTag } from './request-status.ts';
import type { AdkTarget } from '../scenario/types.ts';

/** The metrics both protocols feed (created once, in run.ts). */
export interface RequestMetrics {
  requestDuration: { add(value: number, tags?: Record<string, string>): void };
  /** Served requests only. */
  servedDuration: { add(value: number, tags?: Record<string, string>): void };
  missingBranches: { add(value: boolean, tags?: Record<string, string>): void };
  branchOutcomes: { add(value: number, tags?: Record<string, string>): void };
  requestStatus: { add(value: number, tags?: Record<string, string>): void };
  requestFailures: { add(value: boolean, tags?: Record<string, string>): void };
  requestOutcomes: { add(value: number, tags?: Record<string, string>): void };
}

// What only the ADK protocol can count: ADK's events carry every model response.
const modelCalls = new Counter('qs_model_calls');
const modelTokens = new Counter('qs_model_tokens');

export interface AdkRequest {
  /** Server base URL (no trailing slash); the target's basePath is appended. */
  target: string;
  adk: AdkTarget;
  userId: string;
  document: string;
  timeout: string;
  tags: Record<string, string>;
  metrics: RequestMetrics;
}

export function adkUserRequest(r: AdkRequest): void {
  const { adk, tags, metrics } = r;
  const routes = adkRoutes(r.target, adk, r.userId);
  const headers = { 'content-type': 'application/json' };
  const requestTags = (name: string) => ({ name, tree: tags.tree, traffic_class: tags.traffic_class });
  const ended = (outcome: RequestOutcome) => {
    metrics.requestOutcomes.add(1, { ...tags, outcome });
    metrics.requestFailures.add(outcome === 'failed', tags);
  };
  const fail = (outcome: string) => {
    ended('failed');
    metrics.missingBranches.add(true, tags);
    metrics.branchOutcomes.add(1, { ...tags, author: UNKNOWN_AUTHOR, outcome });
  };

  const session = http.post(routes.sessions, '{}', { headers, timeout: r.timeout, tags: requestTags(routes.sessionsName) });
  let sessionId: unknown;
  try {
    sessionId = (session.json() as { id?: unknown } | null)?.id;
  } catch {
    sessionId = undefined;
  }
  if (session.status < 200 || session.status >= 300 || typeof sessionId !== 'string') {
    metrics.requestDuration.add(session.timings.duration, tags);
    metrics.requestStatus.add(1, { ...tags, status: statusTag(session.status) });
    fail(session.status === 429 ? 'rate_limited' : 'error');
    return;
  }

  const res = http.post(routes.run, runBody(adk, r.userId, sessionId, r.document), {
    headers: routes.sse ? { ...headers, accept: 'text/event-stream' } : headers,
    timeout: r.timeout,
    tags: requestTags(routes.runName),
  });
  metrics.requestDuration.add(res.timings.duration, tags);
  metrics.requestStatus.add(1, { ...tags, status: statusTag(res.status) });
  const body = typeof res.body === 'string' ? res.body : '';
  if (isShedAnswer(res.status, jsonBody(body))) {
    // Shed whole before any model call: no branch ran, so none is missing or failed.
    ended('shed');
    deleteSession(routes, sessionId, r.timeout, requestTags);
    return;
  }
  const reading = readRunResponse(res.status, body, routes.sse, adk.authors);
  modelCalls.add(reading.modelCalls, tags);
  modelTokens.add(reading.inputTokens, { ...tags, type: 'input' });
  modelTokens.add(reading.outputTokens, { ...tags, type: 'output' });
  for (const a of reading.authors) metrics.branchOutcomes.add(1, { ...tags, author: a.author, outcome: a.outcome });
  if (reading.failure) metrics.branchOutcomes.add(1, { ...tags, author: UNKNOWN_AUTHOR, outcome: reading.failure.outcome });
  metrics.missingBranches.add(reading.failure !== undefined || reading.missing.length > 0, tags);
  const outcomes = reading.authors.map((a) => a.outcome);
  const outcome = reading.failure !== undefined ? 'failed' : requestOutcome(res.status, false, outcomes, reading.missing.length);
  ended(outcome);
  if (outcome === 'served') metrics.servedDuration.add(res.timings.duration, tags);
  deleteSession(routes, sessionId, r.timeout, requestTags);
}

// Housekeeping, not part of the request: a null responseCallback keeps it out of
// http_req_failed, so a server without the route (404, 405) fails nothing.
function deleteSession(routes: AdkRoutes, sessionId: string, timeout: string, requestTags: (name: string) => Record<string, string>): void {
  http.del(sessionUrl(routes, sessionId), null, {
    timeout,
    tags: requestTags(routes.deleteSessionName),
    responseCallback: null as unknown as Params['responseCallback'], // k6 takes null; its types do not say so
  });
}
