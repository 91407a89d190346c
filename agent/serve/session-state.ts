// State a client brings to a session (POST .../sessions `state`, /run `stateDelta`, the parts
// of a message, which the session keeps as an event), checked
// before anything stores it: a JSON object at most MAX_STATE_DEPTH levels deep and at most
// MAX_STATE_BYTES long. Deeper state overflows the stack of ADK's deep copies on every later
// read of the session; the depth is measured without recursion, so any depth is safe to check.
import { z } from 'zod';

export const MAX_STATE_DEPTH = 32;
export const MAX_STATE_BYTES = 64 * 1024;

/** The nesting depth of a JSON value (a scalar is 0, `{}` is 1), counted up to `limit + 1`. */
export function jsonDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (item === null || typeof item !== 'object') continue;
    const level = depth + 1;
    if (level > deepest) deepest = level;
    if (deepest > limit) return deepest;
    for (const child of Object.values(item)) stack.push([child, level]);
  }
  return deepest;
}

/** Adds an issue when `value` is nested deeper than MAX_STATE_DEPTH; returns whether it is not. */
export function checkStateDepth(value: unknown, ctx: z.RefinementCtx): boolean {
  if (jsonDepth(value, MAX_STATE_DEPTH) <= MAX_STATE_DEPTH) return true;
  ctx.addIssue({ code: 'custom', message: `nested deeper than ${MAX_STATE_DEPTH} levels` });
  return false;
}

/** Adds an issue when `value` is nested too deep or longer than MAX_STATE_BYTES as JSON. */
export function checkStateBounds(value: unknown, ctx: z.RefinementCtx): void {
  if (!checkStateDepth(value, ctx)) return;
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_STATE_BYTES) ctx.addIssue({ code: 'custom', message: `larger than ${MAX_STATE_BYTES} bytes (${bytes})` });
}

/** A session's state or state delta: an object, bounded in depth and size. */
export const sessionStateSchema = z.record(z.string(), z.unknown()).superRefine(checkStateBounds);

/**
 * A run's stateDelta may not take the session's state (with its app: and user: state, as ADK
 * merges them) past MAX_STATE_BYTES: the reason, or undefined. This bounds the app and user
 * state clients can add through many sessions, too.
 */
export function stateAfterDeltaProblem(state: Record<string, unknown>, delta: Record<string, unknown> | undefined): string | undefined {
  if (delta === undefined || Object.keys(delta).length === 0) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify({ ...state, ...delta }));
  if (bytes <= MAX_STATE_BYTES) return undefined;
  return `stateDelta: the session's state (app: and user: keys included) would be ${bytes} bytes, over ${MAX_STATE_BYTES}`;
}
