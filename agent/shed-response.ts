// The answer to a request shed at the door (RequestShed): HTTP 429 at once, with Retry-After
// in whole seconds (at least 1) and a body in the route's own error shape.
import type { Response } from 'express';
import type { RequestShed } from '../instrumentation/errors.ts';

/** Retry-After of a shed request, whole seconds, at least 1. */
export function retryAfterSeconds(shed: RequestShed): number {
  return Math.max(1, Math.ceil(shed.retryAfterMs / 1000));
}

/** Native route: `{"error":{"code":"REQUEST_SHED","message","reason","retryAfterSeconds"}}`. */
export function answerShedNative(res: Response, shed: RequestShed): void {
  const seconds = retryAfterSeconds(shed);
  res.setHeader('retry-after', String(seconds));
  res.status(429).json({ error: { code: shed.code, message: shed.text, reason: shed.reason, retryAfterSeconds: seconds } });
}

/** ADK API-server routes: FastAPI's error shape, `{"detail": "request shed: …"}`. */
export function answerShedAdk(res: Response, shed: RequestShed): void {
  res.setHeader('retry-after', String(retryAfterSeconds(shed)));
  res.status(429).json({ detail: shed.text });
}
