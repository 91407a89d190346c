// What one user request of an arrival sends, once the scenario's defaults are applied. Pure
// (no Node or k6 imports): the k6 script, the Node driver and the planner side share it.
import type { RequestShape, ScenarioFile, TrafficClass } from './types.ts';

export const DEFAULT_TREE = 'review';
/** Input tokens per model call when a scenario names none (the worked example's 5,000). */
export const DEFAULT_INPUT_TOKENS = 5000;
export const DEFAULT_TRAFFIC_CLASS: TrafficClass = 'interactive';
export const DEFAULT_REQUEST_TIMEOUT_S = 120;
export const DEFAULT_GRACEFUL_STOP_S = 30;

export interface ResolvedRequest {
  tree: string;
  trafficClass: TrafficClass;
  inputTokensPerCall: number;
  width?: number;
}

/** The request an arrival sends: its own fields, else the scenario's defaults, else ours. */
export function resolveRequest(shape: RequestShape, defaults: ScenarioFile['defaults']): ResolvedRequest {
  return {
    tree: shape.tree ?? defaults?.tree ?? DEFAULT_TREE,
    trafficClass: shape.trafficClass ?? defaults?.trafficClass ?? DEFAULT_TRAFFIC_CLASS,
    inputTokensPerCall: shape.inputTokensPerCall ?? defaults?.inputTokensPerCall ?? DEFAULT_INPUT_TOKENS,
    width: shape.width ?? defaults?.width,
  };
}
