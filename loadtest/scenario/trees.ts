// The trees a scenario's native requests call, and the same scenario pointed at one tree (a
// user's agent served alone, whatever tree the scenario file was written for).
import { resolveRequest } from './request.ts';
import type { Arrival, ScenarioFile } from './types.ts';

/** Every tree the scenario's requests name, once each (trace records included; defaults applied). */
export function scenarioTrees(s: ScenarioFile): string[] {
  const trees = s.arrivals.flatMap((a) => (a.kind === 'trace' && a.records ? a.records.map((r) => r.tree) : [resolveRequest(a, s.defaults).tree]));
  return [...new Set(trees)];
}

function arrivalTo(a: Arrival, tree: string): Arrival {
  const sent = { ...a, tree };
  return sent.kind === 'trace' && sent.records ? { ...sent, records: sent.records.map((r) => ({ ...r, tree })) } : sent;
}

/** The scenario with every request sent to `tree`. */
export function withTree(s: ScenarioFile, tree: string): ScenarioFile {
  return { ...s, defaults: { ...s.defaults, tree }, arrivals: s.arrivals.map((a) => arrivalTo(a, tree)) };
}
