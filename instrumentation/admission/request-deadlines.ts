// Every deadline of a request and of its calls, derived in one place.
//
// At the door a request gets one RequestDeadlines value (requestDeadlines):
// - its deadline: the one configured, else DEFAULT_REQUEST_DEADLINE_MS, or
//   AUTO_DEADLINE_CRITICAL_PATHS critical paths when longer (chainDeadlineMs); never shorter
//   than its chain with the door's margin, which a request needs to finish at all;
// - the door deadline: the latest it may still be funded, its deadline less the door's margin
//   (doorMarginMs); now for a lane shed first, which never waits;
// - its chain with the door's margin: the longest its turn lasts when it learns a cold
//   limiter's cost (cold-start.ts).
// Then, per call of the request (callCutoff): the call waits for admission until maxWait after
// it started, or until its request's deadline when that is later (the limiter never cuts an
// admitted request's call for time); once admitted, its permit is reclaimed maxCallMs later
// (permitReclaimAt).
//
// Not derived here: maxWaitMs and maxCallMs are options (their defaults are resolved by
// retry-policy.ts and rate-limited-llm.ts), and a Redis budget's commandDeadlineMs bounds one
// Redis command, not a request.
import {
  AUTO_DEADLINE_CRITICAL_PATHS,
  DEFAULT_REQUEST_DEADLINE_MS,
  DOOR_CRITICAL_PATH_MARGIN,
  DOOR_SEEN_PATH_MARGIN,
  MAX_REQUEST_DEADLINE_MS,
} from '../defaults.ts';

/** A request's deadlines, computed once at the door; absolute times are on the admission's clock. */
export interface RequestDeadlines {
  /** When the request arrived. */
  readonly arrivedAt: number;
  /** Its deadline from arrival, ms. */
  readonly requestMs: number;
  /** When it should be answered: arrivedAt + requestMs. */
  readonly request: number;
  /** The latest it may still be funded at the door. */
  readonly door: number;
  /** Its chain with the door's margin, ms: the longest it learns a cold limiter's cost for the others. */
  readonly chainMs: number;
}

/** What the door knows of a request when it arrives. */
export interface DoorTiming {
  readonly arrivedAt: number;
  /** Now, on the admission's clock. */
  readonly now: number;
  /** Calls on the tree's critical path (0 when it cannot be counted). */
  readonly depth: number;
  /** The call time the request is planned with, ms. */
  readonly callMs: number;
  /** The tree's path as its calls were seen: the latest mean start after admission plus a call, ms (0 when none seen). */
  readonly seenPathMs: number;
  /** The configured request deadline, ms; undefined: the default, lengthened for deep trees. */
  readonly configuredMs: number | undefined;
  /** A lane shed first: never waits at the door. */
  readonly shedFirst: boolean;
}

/** A request's deadlines at the door. */
export function requestDeadlines(t: DoorTiming): RequestDeadlines {
  const requestMs = deadlineMsFor(t.depth, t.callMs, t.configuredMs);
  const request = t.arrivedAt + requestMs;
  const door = t.shedFirst ? t.now : request - doorMarginMs(t.depth, t.callMs, t.seenPathMs);
  return { arrivedAt: t.arrivedAt, requestMs, request, door, chainMs: chainWithMarginMs(t.depth, t.callMs) };
}

/**
 * The deadline a chain alone asks for: AUTO_DEADLINE_CRITICAL_PATHS times `criticalPath`,
 * rounded up to whole `unitMs` (criticalPath is in that unit: 1 for ms, 1000 for seconds, as a
 * flag takes it), at most MAX_REQUEST_DEADLINE_MS.
 */
export function chainDeadlineMs(criticalPath: number, unitMs = 1): number {
  return Math.min(MAX_REQUEST_DEADLINE_MS, Math.ceil(AUTO_DEADLINE_CRITICAL_PATHS * criticalPath) * unitMs);
}

/** A request's deadline, ms: the one configured, else DEFAULT_REQUEST_DEADLINE_MS or chainDeadlineMs when longer (at most MAX_REQUEST_DEADLINE_MS). */
export function requestDeadlineMsFor(criticalPathMs: number, configuredMs?: number): number {
  if (configuredMs !== undefined) return configuredMs;
  return Math.max(DEFAULT_REQUEST_DEADLINE_MS, chainDeadlineMs(criticalPathMs));
}

/**
 * The deadline of a request whose critical path is `depth` calls of `callMs` each: the
 * configured one (else the default, lengthened for deep trees), and never shorter than the
 * chain with its door margin; shorter, it gets the chain's own deadline, as an unset one on a deep tree.
 */
export function deadlineMsFor(depth: number, callMs: number, configuredMs: number | undefined): number {
  const deadlineMs = requestDeadlineMsFor(depth * callMs, configuredMs);
  if (deadlineMs >= chainWithMarginMs(depth, callMs)) return deadlineMs;
  return chainDeadlineMs(depth * callMs);
}

/** A chain of `depth` calls of `callMs` each, with the door's margin: the least a request needs to finish. */
export function chainWithMarginMs(depth: number, callMs: number): number {
  return DOOR_CRITICAL_PATH_MARGIN * depth * callMs;
}

/**
 * What a request must have left of its deadline when it is admitted, to end whole: its depth
 * in calls with the door's margin, or, when longer, its path as seen (`seenPathMs`) with a
 * smaller one. The second counts what the calls' time leaves out (the tree's own steps, waits
 * for a permit): with short calls those alone outlast the first margin.
 */
export function doorMarginMs(depth: number, callMs: number, seenPathMs: number): number {
  return Math.max(chainWithMarginMs(depth, callMs), DOOR_SEEN_PATH_MARGIN * seenPathMs);
}

/** Until when one call waits for admission, and whether reaching it is its request's deadline (not maxWait). */
export interface CallCutoff {
  readonly deadline: number;
  readonly isRequest: boolean;
}

/**
 * A call's admission cutoff: maxWait after it started; for a call of an admitted request, its
 * request's deadline when later (it was admitted because it can finish: cutting it would end
 * the request partial).
 */
export function callCutoff(start: number, maxWaitMs: number, requestDeadline: number | undefined): CallCutoff {
  const waitDeadline = start + maxWaitMs;
  const deadline = requestDeadline === undefined ? waitDeadline : Math.max(waitDeadline, requestDeadline);
  return { deadline, isRequest: deadline > waitDeadline };
}

/** When an admitted call's permit is reclaimed if still held. */
export function permitReclaimAt(admittedAt: number, maxCallMs: number): number {
  return admittedAt + maxCallMs;
}
