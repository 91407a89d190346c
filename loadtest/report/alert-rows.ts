// The alerts table of the report: one row per alert and label set, however often it flickered
// between pending, firing and resolved, with when it first went pending and first fired.
import type { AlertSpan } from './collect.ts';

export interface AlertRow {
  name: string;
  severity?: string;
  labels: string;
  /** Epoch ms of the first pending and first firing stretch (undefined: never in that state). */
  firstPending?: number;
  firstFiring?: number;
  /** Epoch ms of the last sample in either state. */
  lastSeen: number;
  /** Stretches in each state: more than one is flicker (resolved, then back). */
  pendingStretches: number;
  firingStretches: number;
  /** Total time firing, ms (each stretch from its first to its last sample). */
  firingMs: number;
}

/** The stretches of `spans` as one row per alert and label set, in order of their first stretch. */
export function alertRows(spans: readonly AlertSpan[]): AlertRow[] {
  const rows = new Map<string, AlertRow>();
  const ordered = [...spans].sort((a, b) => a.start - b.start);
  for (const s of ordered) {
    const key = `${s.name}\u0000${s.labels}`;
    let row = rows.get(key);
    if (!row) {
      row = { name: s.name, severity: s.severity, labels: s.labels, lastSeen: s.end, pendingStretches: 0, firingStretches: 0, firingMs: 0 };
      rows.set(key, row);
    }
    row.severity ??= s.severity;
    row.lastSeen = Math.max(row.lastSeen, s.end);
    if (s.state === 'pending') {
      row.pendingStretches++;
      row.firstPending ??= s.start;
    } else {
      row.firingStretches++;
      row.firstFiring ??= s.start;
      row.firingMs += s.end - s.start;
    }
  }
  return [...rows.values()];
}
