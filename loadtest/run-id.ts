// A run's id: when it started (ISO 8601, with `:` and `.` made file-name safe) and what it
// ran. It names the run's folder (reports/<run-id>/), k6's testid tag and the run record.

/** The id of a run of `what` (a scenario's name) started at `at`. */
export function runIdFor(what: string, at: Date = new Date()): string {
  return `${at.toISOString().replace(/[:.]/g, '-')}-${what}`;
}
