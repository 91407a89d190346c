// Turns a scenario file into k6 `options.scenarios` and thresholds. Pure (no k6 imports),
// so Node tests can check it too. Each arrival becomes one or more k6 scenarios (see
// scenario/arrivals.ts) whose `env` tells the request function what to send.
import { k6ScenariosOf } from '../scenario/arrivals.ts';
import { DEFAULT_GRACEFUL_STOP_S, DEFAULT_REQUEST_TIMEOUT_S, resolveRequest } from '../scenario/request.ts';
import type { RequestShape, ScenarioFile, TraceRecord } from '../scenario/types.ts';
import { type K6Scenario, ms, type SlotEnv } from '../scenario/executors.ts';

export interface BuiltOptions {
  scenarios: Record<string, K6Scenario>;
  thresholds: Record<string, string[]>;
  /** The trace records in send order (index = TRACE_FIRST + iteration). */
  trace: TraceRecord[];
}

function slotEnv(shape: RequestShape, defaults: RequestShape | undefined, traceFirst = -1): SlotEnv {
  const r = resolveRequest(shape, defaults);
  return {
    TREE: r.tree,
    TRAFFIC_CLASS: r.trafficClass,
    INPUT_TOKENS: String(r.inputTokensPerCall),
    WIDTH: String(r.width ?? ''),
    TRACE_FIRST: String(traceFirst),
  };
}

export function buildOptions(file: ScenarioFile): BuiltOptions {
  const requestTimeoutS = file.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S;
  const gracefulStop = ms(file.gracefulStop ?? DEFAULT_GRACEFUL_STOP_S);
  const scenarios: Record<string, K6Scenario> = {};
  const trace: TraceRecord[] = [];
  const add = (kind: string, index: number, list: K6Scenario[]) => {
    list.forEach((s, j) => {
      scenarios[list.length > 1 ? `${kind}_${index}_${j}` : `${kind}_${index}`] = s;
    });
  };

  file.arrivals.forEach((a, index) => {
    const base = {
      gracefulStop,
      exec: 'userRequest',
      env: slotEnv(a, file.defaults),
      tags: { arrival: `${a.kind}_${index}`, traffic_class: resolveRequest(a, file.defaults).trafficClass },
    };
    add(a.kind, index, k6ScenariosOf(a, { base, requestTimeoutS, index, trace, envFor: (first) => slotEnv(a, file.defaults, first) }));
  });

  return { scenarios, thresholds: buildThresholds(file), trace };
}

export function buildThresholds(file: ScenarioFile): Record<string, string[]> {
  const t = file.thresholds ?? {};
  const out: Record<string, string[]> = {};
  if (t.httpFailedRate !== undefined) out['http_req_failed'] = [`rate<=${t.httpFailedRate}`];
  for (const [cls, limit] of Object.entries(t.p95Ms ?? {})) {
    if (limit !== undefined) out[`qs_request_duration{traffic_class:${cls}}`] = [`p(95)<${limit}`];
  }
  if (t.missingBranchesRate !== undefined) out['qs_missing_branches'] = [`rate<=${t.missingBranchesRate}`];
  for (const [metric, exprs] of Object.entries(t.k6 ?? {})) out[metric] = [...(out[metric] ?? []), ...exprs];
  return out;
}
