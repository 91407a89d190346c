// The k6 entry script: one scenario file (SCENARIO_FILE, validated by Node first) becomes
// k6 scenarios; every iteration is one user request to the agent service (or, with
// protocol adk, to an ADK API server: adk-protocol.ts), and its duration, permit wait and
// branch outcomes become the custom metrics the dashboards read.
//   k6 run -e SCENARIO_FILE=/abs/burst.json -e TARGET=http://127.0.0.1:8080 loadtest/k6/run.ts
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter, Rate, Trend } from 'k6/metrics';
import type { Options } from 'k6/options';
import { DEFAULT_REQUEST_TIMEOUT_S } from '../scenario/request.ts';
import type { ScenarioFile } from '../scenario/types.ts';
import { adkUserRequest } from './adk-protocol.ts';
import { buildOptions } from './build-options.ts';
import { documentForTokens } from '../scenario/document.ts';
import {
  isShedAnswer,
  jsonBody,
  REQUEST_FAILED_METRIC,
  REQUEST_OUTCOME_METRIC,
  REQUEST_STATUS_METRIC,
  REQUESTS_STARTED_METRIC,
  SERVED_DURATION_METRIC,
  type RequestOutcome,
  requestOutcome,
  statusTag,
} from './request-status.ts';
import { SUMMARY_SUBMETRICS, summaryText } from './summary-text.ts';

if (!__ENV.SCENARIO_FILE) throw new Error('SCENARIO_FILE is not set (path of a scenario JSON file)');
const file = JSON.parse(open(__ENV.SCENARIO_FILE)) as ScenarioFile;
const built = buildOptions(file);
// TARGET may list several replicas (comma-separated); requests spread over them.
const targets = (__ENV.TARGET ?? 'http://127.0.0.1:8080').split(',').map((t) => t.trim().replace(/\/$/, ''));
const timeout = `${file.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S}s`;

export const options: Options = {
  // biome-ignore lint/suspicious/noExplicitAny: our loose scenario type is k6's Scenario union
  scenarios: built.scenarios as any,
  thresholds: { ...SUMMARY_SUBMETRICS, ...built.thresholds },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)', 'count'],
};

const requestDuration = new Trend('qs_request_duration', true);
const servedDuration = new Trend(SERVED_DURATION_METRIC, true);
const permitWait = new Trend('qs_permit_wait', true);
const missingBranches = new Rate('qs_missing_branches');
const branchOutcomes = new Counter('qs_branch_outcomes');
const requestStatus = new Counter(REQUEST_STATUS_METRIC);
const requestFailures = new Rate(REQUEST_FAILED_METRIC);
const requestOutcomes = new Counter(REQUEST_OUTCOME_METRIC);
// Counted before the first HTTP call: started minus ended is what the run's end cut off.
const requestsStarted = new Counter(REQUESTS_STARTED_METRIC);

// Documents are built once per VU per size, not once per request.
const documents = new Map<string, string>();
function documentFor(tokens: number): string {
  const key = String(tokens);
  let doc = documents.get(key);
  if (doc === undefined) {
    doc = documentForTokens(tokens, tokens);
    documents.set(key, doc);
  }
  return doc;
}

interface AgentResponse {
  branches?: { name: string; outcome: string }[];
  missingBranches?: string[];
  permitWaitMs?: number;
}

export function userRequest(): void {
  const env = __ENV;
  const traceFirst = Number(env.TRACE_FIRST ?? -1);
  const record = traceFirst >= 0 ? built.trace[traceFirst + exec.scenario.iterationInTest] : undefined;
  const tree = file.adk?.app ?? record?.tree ?? env.TREE;
  const trafficClass = record?.trafficClass ?? env.TRAFFIC_CLASS;
  const tokens = record?.inputTokensPerCall ?? Number(env.INPUT_TOKENS);
  const width = record?.width ?? (env.WIDTH ? Number(env.WIDTH) : undefined);
  const tags = { tree, scenario: file.name, traffic_class: trafficClass };
  requestsStarted.add(1, tags);

  const userId = file.adk?.userId ?? `vu-${exec.vu.idInTest}`;
  // In turn, as a round-robin load balancer sends them: each replica's static share gets its
  // share of the arrivals. Spread by VU and its own iteration, one replica took two requests
  // close together while another idled, and shed below what the replicas' doors serve.
  const target = targets[exec.scenario.iterationInTest % targets.length];
  if (file.protocol === 'adk' && file.adk) {
    const metrics = { requestDuration, servedDuration, missingBranches, branchOutcomes, requestStatus, requestFailures, requestOutcomes };
    adkUserRequest({ target, adk: file.adk, userId, document: documentFor(tokens), timeout, tags, metrics });
    return;
  }
  const body = JSON.stringify({ document: documentFor(tokens), width, trafficClass, userId });
  const res = http.post(`${target}/v1/agents/${tree}/run`, body, {
    headers: { 'content-type': 'application/json' },
    timeout,
    tags: { name: `POST /v1/agents/${tree}/run`, tree, traffic_class: trafficClass },
  });
  requestDuration.add(res.timings.duration, tags);
  requestStatus.add(1, { ...tags, status: statusTag(res.status) });
  const ended = (outcome: RequestOutcome) => {
    requestOutcomes.add(1, { ...tags, outcome });
    if (outcome === 'served') servedDuration.add(res.timings.duration, tags);
    requestFailures.add(outcome === 'failed', tags);
  };
  const parsed = jsonBody(typeof res.body === 'string' ? res.body : undefined) as AgentResponse | undefined;
  if (res.status !== 200 || parsed === undefined) {
    const shed = isShedAnswer(res.status, parsed);
    // A shed request was never admitted: it has no branches to miss.
    if (!shed) missingBranches.add(true, tags);
    ended(requestOutcome(res.status, shed, undefined));
    return;
  }
  const outcomes = parsed.branches?.map((b) => b.outcome);
  ended(requestOutcome(res.status, false, outcomes, parsed.missingBranches?.length ?? 0));
  if (typeof parsed.permitWaitMs === 'number') permitWait.add(parsed.permitWaitMs, tags);
  missingBranches.add((parsed.missingBranches?.length ?? 0) > 0, tags);
  for (const b of parsed.branches ?? []) branchOutcomes.add(1, { ...tags, outcome: b.outcome });
}

export default userRequest;

// biome-ignore lint/suspicious/noExplicitAny: k6's summary data is an untyped JSON tree
export function handleSummary(data: any): Record<string, string> {
  const out: Record<string, string> = { stdout: summaryText(data, file.name) };
  if (__ENV.REPORT_DIR) out[`${__ENV.REPORT_DIR}/k6-summary.json`] = JSON.stringify(data, null, 2);
  return out;
}
