// What `npm start` (`quotascope start`) takes: the worked example's run, each figure
// overridable. Kept apart from the run so --help shows the defaults without loading it.
import { z } from 'zod';
import { QUOTA_SCOPES, QUOTA_SHARING_MODES } from '../agent/config.ts';
import { perModelSchema } from '../agent/per-model.ts';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
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
