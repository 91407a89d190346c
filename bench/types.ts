// The contract between a part's benchmark and `npm run bench`: each part has a module
// bench/<part>.ts whose default export runs its measurements and returns rows. Rows of one
// group are reported as ratios against that group's baseline row, measured in the same run.

export interface BenchRow {
  /** Rows compared with each other, e.g. "wrapper overhead per uncontended call". */
  readonly group: string;
  /** What was measured, e.g. "delegate called directly". */
  readonly name: string;
  /** The row the others of its group are divided by. Exactly one per group. */
  readonly baseline: boolean;
  /** Throughput: operations (calls, requests) per second. */
  readonly opsPerSec: number;
  /** Mean time per operation in nanoseconds, where meaningful. */
  readonly meanNs?: number;
  /** Free-form extra figures (p99, sample count, …) written to the JSON file. */
  readonly extra?: Record<string, number | string>;
}

/** What the runner passes a module: `variants` (from --variants) is set only for a module that exports `variants`. */
export interface BenchModuleOptions {
  /** Run only these of the module's variants (names from its `variants` export). */
  readonly variants?: readonly string[];
}

/**
 * The default export. A module with variants to pick from also exports `variants` (their
 * names); the runner checks --variants against them.
 */
export type BenchModule = (options?: BenchModuleOptions) => Promise<BenchRow[]>;
