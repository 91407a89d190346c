// Plan vs measured as a run prints it: a header line (binding quota, counted tokens,
// admission, steady window, call time planned and measured), then a row per quantity with
// its relative error.
import type { PlanVsMeasured } from './plan-vs-measured.ts';

export function formatComparison(c: PlanVsMeasured): string {
  const width = Math.max(20, ...c.rows.map((r) => r.quantity.length + 2));
  const seconds = Math.round((c.window.end - c.window.start) / 1000);
  const call = c.measuredCallSeconds === undefined ? '-' : `${c.measuredCallSeconds.toFixed(3)} s`;
  const models = c.models && c.models.length > 0 ? `; each model planned against its own quota, ${c.tokens === 'calibrated' ? 'input tokens per call calibrated from the tree' : 'input tokens per call as given'}` : '';
  const forward = c.forwardRun ? `, served as a forward run of the tree through one replica's door found it (${c.forwardRun.minutes} simulated min)` : '';
  const lines = [
    `plan vs measured (binding quota: ${c.binding}, ${c.countedTokens} tokens counted${models}; ${c.admission === 'request' ? `request admission${forward}` : 'per-call admission'}; steady window ${seconds} s; call time planned ${c.plannedCallSeconds.toFixed(3)} s, measured ${call})`,
    `  ${'quantity'.padEnd(width)}${'planned'.padStart(10)}${'measured'.padStart(10)}${'error'.padStart(9)}`,
  ];
  for (const r of c.rows) {
    const err = Number.isFinite(r.relativeError) ? `${r.relativeError >= 0 ? '+' : ''}${(r.relativeError * 100).toFixed(1)}%` : 'n/a';
    lines.push(`  ${r.quantity.padEnd(width)}${r.planned.toFixed(1).padStart(10)}${r.measured.toFixed(1).padStart(10)}${err.padStart(9)}`);
  }
  return lines.join('\n');
}
