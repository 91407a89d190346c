// The wrapper's defaults and the bounds of its options, in one place: RateLimitedLlm, its
// retry policy and the option fields (limiter-options.ts) read them from here.
import type { CountedTokenKind } from './counted-tokens.ts';

/** Bound on the whole wait for admission (permit + budget) and on retry delays, ms. */
export const DEFAULT_MAX_WAIT_MS = 20_000;
/** The largest maxWait, ms: an hour of waiting is already a misconfiguration (the acquire-time buckets end there). */
export const MAX_WAIT_MS_LIMIT = 3_600_000;

/**
 * Concurrent model calls per replica when a service is given none (the worked example's).
 * RateLimitedLlm has no default: its maxConcurrent (or a shared semaphore) is required.
 */
export const DEFAULT_PERMITS = 10;
export const MAX_PERMITS = 10_000;

/** Delegate calls per model call, the first included. */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** The largest maxWaiting accepted (a cap on waiting calls is a bound on memory: keep it one). */
export const MAX_WAITING_LIMIT = 100_000;

/** A permit held longer than this is reclaimed and its call aborted, ms. */
export const DEFAULT_MAX_CALL_MS = 300_000;

/** Full-jitter backoff between rate-limited attempts, ms. */
export const DEFAULT_BACKOFF = { baseMs: 500, capMs: 30_000 } as const;

/** Retry budget: retries per call made in the window, the window, and the floor per window. */
export const DEFAULT_RETRY_RATIO = 0.1;
export const DEFAULT_RETRY_WINDOW_MS = 60_000;
export const DEFAULT_MIN_RETRIES = 10;

/** Tokens a budget counts: input, as Gemini's tokens-per-minute quota does. */
export const DEFAULT_COUNTED_TOKENS: CountedTokenKind = 'input';

/** The quota window a budget counts in (a provider's per-minute quota), ms, and its bounds. */
export const DEFAULT_WINDOW_MS = 60_000;
export const MIN_WINDOW_MS = 1_000;
export const MAX_WINDOW_MS = 3_600_000;

/**
 * A request's deadline, ms: it is admitted only if it can be funded in time to finish within
 * it, and a call that cannot finish before it is not started. 60 s is the idle timeout of the
 * front ends an agent usually sits behind by default (nginx's proxy_read_timeout, AWS ALB,
 * Google Cloud Load Balancing's backend timeout), so an answer later than that is lost to
 * the user anyway. Bounded to [1 s, 600 s].
 */
export const DEFAULT_REQUEST_DEADLINE_MS = 60_000;
export const MIN_REQUEST_DEADLINE_MS = 1_000;
export const MAX_REQUEST_DEADLINE_MS = 600_000;

/**
 * A model call's time assumed before a limiter has measured one, ms: request admission sizes a
 * cold request's deadline and door from it (depth x call time), so a deep tree's first
 * requests are not given a deadline shorter than their own chain. Conservative on purpose: a
 * Gemini call with a long answer takes 10-20 s; a shorter guess cuts a deep tree's first
 * burst. Set it (expectedCallMs) from a calibration where one ran; measured calls replace it.
 */
export const DEFAULT_EXPECTED_CALL_MS = 20_000;
export const MAX_EXPECTED_CALL_MS = 600_000;
/** The largest counted tokens per call a limiter may be told to expect (bounds a typo, not a model). */
export const MAX_EXPECTED_TOKENS_PER_CALL = 100_000_000;

/** How request admission admits: a whole request at the door (`request`), or each model call alone (`call`). */
export const ADMISSION_MODES = ['request', 'call'] as const;
export type AdmissionMode = (typeof ADMISSION_MODES)[number];
export const DEFAULT_ADMISSION_MODE: AdmissionMode = 'request';

/** Lanes whose requests never wait at the door and are shed while other requests wait. */
export const DEFAULT_SHED_FIRST_LANES: readonly string[] = ['batch'];

/**
 * The step down of a static or central budget on a provider 429 (limits/quota-step-down.ts).
 * A cut keeps at least STEP_DOWN_MAX_CUT of the limit before it and never goes below
 * STEP_DOWN_MIN_FRACTION of the ceiling (the configured tokens per window); it lands
 * STEP_DOWN_MARGIN below what the provider counted in its window when the 429 came. A 429
 * that names no per-minute quota is the caller's own only when the window held at least
 * STEP_DOWN_NEAR_FRACTION of the limit (else shared capacity: no cut). The cut limit holds
 * STEP_DOWN_HOLD_WINDOWS windows after the last 429 of the caller's own, then climbs
 * STEP_DOWN_STEP of the ceiling every STEP_DOWN_STEP_WINDOWS of a window. A second cut comes
 * no sooner than the 429's retry delay and STEP_DOWN_SPACING_WINDOWS of a window after the
 * first: calls already in flight hear the same wall.
 */
export const STEP_DOWN_MAX_CUT = 0.5;
export const STEP_DOWN_MIN_FRACTION = 0.25;
export const STEP_DOWN_MARGIN = 0.05;
export const STEP_DOWN_NEAR_FRACTION = 0.9;
export const STEP_DOWN_HOLD_WINDOWS = 2;
export const STEP_DOWN_STEP = 0.05;
export const STEP_DOWN_STEP_WINDOWS = 0.1;
export const STEP_DOWN_SPACING_WINDOWS = 0.25;

/**
 * Request admission's deadlines (admission/request-deadlines.ts). The door waits for a request to be
 * funded at most until its deadline less DOOR_CRITICAL_PATH_MARGIN times its critical path at
 * the expected call time (room for calls above the mean and for permit waits once admitted),
 * or less DOOR_SEEN_PATH_MARGIN times its path as seen (each agent's mean start after
 * admission, plus a call: it already holds those waits) when that is more. An unset request
 * deadline is at least AUTO_DEADLINE_CRITICAL_PATHS critical paths, and so is a configured one
 * shorter than the chain with its door margin.
 */
export const DOOR_CRITICAL_PATH_MARGIN = 1.5;
export const DOOR_SEEN_PATH_MARGIN = 1.2;
export const AUTO_DEADLINE_CRITICAL_PATHS = 2;
/** Retry-after of a request shed while a shared budget is unreachable and fails closed (when it names none), ms. */
export const DEFAULT_UNAVAILABLE_RETRY_MS = 5_000;

/**
 * AIMD (limits/aimd.ts): the permits' factor on a congestion signal, the window limit's factor
 * on one that names no retry delay, how far below its share of a filled window a 429 naming a
 * retry delay puts the window limit, the additive step's factor per further clean window, and
 * the windows a measured ceiling is trusted. A window holding AIMD_NEARLY_FULL of its limit
 * counts as bound. Bounds: tokenGrowth in [1, AIMD_MAX_TOKEN_GROWTH], ceilingWindows in
 * [1, AIMD_MAX_CEILING_WINDOWS].
 */
export const AIMD_BACKOFF_RATIO = 0.9;
export const AIMD_TOKEN_BACKOFF_RATIO = 0.8;
export const AIMD_SHARE_MARGIN = 0.05;
export const AIMD_TOKEN_GROWTH = 16;
export const AIMD_MAX_TOKEN_GROWTH = 32;
export const AIMD_CEILING_WINDOWS = 9;
export const AIMD_MAX_CEILING_WINDOWS = 1_000;
export const AIMD_NEARLY_FULL = 0.9;

/** The longest hold, climb step or spacing a quota step-down takes, ms (a day). */
export const STEP_DOWN_MAX_MS = 86_400_000;

/** Part of the quota a static split between replicas uses (limits/replica-share.ts): 10 % kept for estimate error and bursts. */
export const DEFAULT_REPLICA_HEADROOM = 0.9;

/** UsageEstimator: output tokens assumed before any usage was seen, the quantile of recent output reserved, and the calls remembered per agent. */
export const DEFAULT_INITIAL_OUTPUT_TOKENS = 1_000;
export const DEFAULT_OUTPUT_QUANTILE = 0.95;
export const DEFAULT_ESTIMATE_WINDOW = 100;

/**
 * Slots per quota window of a budget's rolling window: a slot is counted until its end is a
 * window old, so a wait runs up to one slot longer than the tokens need. One size per store,
 * as one size for both would change what each admits: the local ring (601 slots in memory)
 * costs nothing per slot, so its slots are 100 ms of a minute; the script reads every live
 * slot and hold field of the window in one HMGET per scheduled check and keeps them in the
 * key, so Redis' slots are 600 ms of a minute (six times fewer fields per run and key).
 * Moving either changes every wait it answers (rounded to its slot end) and the tests' figures.
 */
export const LOCAL_WINDOW_SLOTS = 600;
export const REDIS_WINDOW_SLOTS = 100;

/** A shared budget: a Redis command that has not answered after this long counts as Redis unreachable, ms. */
export const DEFAULT_REDIS_COMMAND_DEADLINE_MS = 500;
/** A shared budget: how often the health probe asks Redis, ms. */
export const DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS = 1_000;
/** A shared budget: after a Redis failure, serve from the fallback this long before trying Redis again, ms. */
export const DEFAULT_REDIS_RETRY_AFTER_MS = 1_000;
/** A shared budget: the longest a waiting reservation sleeps between two tries, ms (tokens given back by other replicas are noticed). */
export const DEFAULT_REDIS_MAX_POLL_MS = 1_000;
