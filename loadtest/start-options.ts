// What `npm start` (`quotascope start`) takes: the worked example's run, each figure
// overridable. Kept apart from the run so --help shows the defaults without loading it.
import { z } from 'zod';
import { QUOTA_SCOPES, QUOTA_SHARING_MODES } from '../agent/config.ts';
import { perModelSchema } from '../agent/per-model.ts';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
import { DEFAULT_WINDOW_MS } from '../instrumentation/defaults.ts';
import { limiterOptionFields } from '../instrumentation/limiter-options.ts';
import { treeNameSchema } from './scenario/schema.ts';

/** The limiter's options (permits and maxWait per replica, admission, the request deadline, the counted tokens) are the limiter's own fields; countedTokens reaches the mock, the planner and the report too. */
export const startOptionsSchema = limiterOptionFields.pick({ permits: true, maxWaitMs: true, admission: true, requestDeadlineMs: true, countedTokens: true }).extend({
  /** A user's ADK agent module to run instead of the sample agent service: `FILE[#export]`, export rootAgent by default. */
  agent: z.string().min(1).max(4096).optional(),
  /** The tree every request calls (default review, or the trees a scenario names; with agent the served app's name, default the module's name). */
  tree: treeNameSchema.optional(),
  /** A scenario file instead of the built-in run (a name in loadtest/scenarios or a path). */
  scenario: z.string().min(1).optional(),
  /** Seconds of steady traffic after the burst (unset: steadySecondsFor the tree, run-fit.ts). */
  duration: z.int().min(1).max(86_400).optional(),
  /** Steady user requests per minute. */
  rate: z.number().positive().max(100_000).default(EX.userRequestsPerMinute),
  /** Users clicking at once at the start. */
  burstUsers: z.int().min(0).max(10_000).default(EX.burstUsers),
  /** Agent service replicas sharing the budget. */
  replicas: z.int().min(1).max(32).default(EX.replicas),
  /** Provider tokens per minute of each model: one number for every model, or per model (`*` for the others). */
  quotaTpm: perModelSchema(z.int().positive().max(1e12), EX.quotaTokensPerMinute),
  /** Provider requests per minute of each model, likewise. */
  quotaRpm: perModelSchema(z.int().positive().max(1e9), EX.quotaRequestsPerMinute),
  /** The quota's scope at the mock and in the limiters: each model its own (Gemini's), or every model of the key one. */
  quotaScope: z.enum(QUOTA_SCOPES).default('model'),
  /** How the replicas share the quota: static shares, one window in a redis-server `start` runs (central), or each learning its share from 429s (adaptive). */
  quotaSharing: z.enum(QUOTA_SHARING_MODES).default('static'),
  /** Model call latency at the mock, seconds. */
  callSeconds: z.number().positive().max(600).default(EX.callSeconds),
  /** Input tokens per model call. */
  tokens: z.int().min(101).max(1_000_000).default(EX.inputTokensPerCall),
  /** Where reports/<run-id> goes. */
  reportDir: z.string().min(1).default('reports'),
});
export type StartOptions = z.output<typeof startOptionsSchema>;

/** The quota window of a `start` run (the mock's and every limiter's), s. */
export const RUN_QUOTA_WINDOW_SECONDS = DEFAULT_WINDOW_MS / 1000;

/** Seconds of steady traffic when --duration is not given, for the sample trees. */
export const DEFAULT_STEADY_SECONDS = 300;
/**
 * Quota windows of steady traffic when --duration is not given, for a tree of the user's own
 * (--agent) under request admission: steadyWindow measures the last 5 after a warm-up of 4.
 * The opening burst starts every replica's door at once, and a saturated door can go on
 * admitting in clusters a quota window apart (whole windows) for a few windows before its
 * admissions spread: contract_review's door admitted 12/min for 3.4 windows, then 13 to
 * 13.5. At 300 s, simulated runs read research_pipeline's flash row 5 % and
 * claims_pipeline's rows 9 % and 13 % over what the door serves.
 */
export const OWN_TREE_STEADY_QUOTA_WINDOWS = 9;

/** The steady phase's length when --duration is not given: the sample trees' default, or 9 quota windows (and the 1 s steadyWindow leaves out) for a tree of the user's own whose requests the door admits whole. */
export function defaultSteadySeconds(ownTree: boolean, f: Pick<StartOptions, 'admission'>): number {
  return ownTree && f.admission !== 'call' ? OWN_TREE_STEADY_QUOTA_WINDOWS * RUN_QUOTA_WINDOW_SECONDS + 1 : DEFAULT_STEADY_SECONDS;
}
