// What `quotascope sweep` takes: start's stack flags (the worked example's, with the call
// time scaled down so a sweep fits in minutes) and the sweep's own: the knee's criteria, the
// capacity gate and the step length. Kept apart from the run so --help shows the defaults
// without loading it; the sweep's knobs and defaults live here.
import { z } from 'zod';
import { WORKED_EXAMPLE } from '../../agent/worked-example.ts';
import { startOptionsSchema } from '../start-options.ts';

/** The mock's call time a sweep runs at by default, s: the worked example's 8 s scaled by 1/4 (the planner's capacity does not depend on it while the token budget binds). */
export const SWEEP_CALL_SECONDS = 2;
/** The provider quota's window, s: a step measures one whole window by default. */
export const PROVIDER_WINDOW_SECONDS = 60;
/** The served requests' p95 a knee step may have at the worked example's call time, s (the scenarios' interactive p95 threshold); scaled like the call time. */
export const DEFAULT_SLO_P95_SECONDS = 60;

/** The SLO's default is at least this many critical paths of the tree. */
export const SLO_CRITICAL_PATHS = 1.5;

/** How much faster than the worked example's calls a sweep's run: its call time over 8 s. Deadlines and the SLO default scale by it. */
export const timeScaleOf = (callSeconds: number): number => callSeconds / WORKED_EXAMPLE.callSeconds;
/** Percent of the offered requests a knee step may shed (or lose otherwise). */
export const MAX_LOST_PERCENT = 1;
/** Bisection stops when the bracket is this narrow, relative to its low end. */
export const SWEEP_RESOLUTION = 0.03;
/** The first rate is this share of the plan's capacity (the search doubles from there). */
export const START_SHARE_OF_PLAN = 0.5;
/** The first rate when nothing is planned, per minute. */
export const START_RATE_WITHOUT_PLAN = 4;
/** Rates are probed up to this multiple of the plan's capacity. */
export const MAX_MULTIPLE_OF_PLAN = 4;
/** The plan and the knee "differ" beyond this share; a planned quantity is "off" beyond it. */
export const PLAN_TOLERANCE = 0.05;

export const sweepOptionsSchema = startOptionsSchema
  .omit({ scenario: true, duration: true, rate: true, burstUsers: true })
  .extend({
    /** Model call latency at the mock, s (scaled down from the worked example's 8 s). */
    callSeconds: z.number().positive().max(600).default(SWEEP_CALL_SECONDS),
    /** The served requests' p95 a knee step may have, s (default: DEFAULT_SLO_P95_SECONDS scaled like the call time). */
    sloP95: z.number().positive().max(3600).optional(),
    /** Percent of the offered requests a knee step may leave partial. */
    maxPartial: z.number().min(0).max(100).default(1),
    /** Exit 1 when the measured knee is below this many user requests per minute. */
    require: z.number().positive().max(100_000).optional(),
    /** Seconds each step measures (after its warm-up): a provider window by default. */
    windowSeconds: z.int().min(10).max(600).default(PROVIDER_WINDOW_SECONDS),
    /** Search steps at most (doubling and bisection), repeats aside. */
    maxSteps: z.int().min(2).max(30).default(6),
    /** Extra steps at the knee's rate, for its ±. */
    repeats: z.int().min(0).max(10).default(2),
    /** The first rate probed, per minute (default: half the plan's capacity). */
    startRate: z.number().positive().max(100_000).optional(),
  });
export type SweepOptions = z.output<typeof sweepOptionsSchema>;
