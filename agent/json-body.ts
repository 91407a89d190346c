// The JSON body parser of every POST route of the agent service and serve. A body of another
// content type is refused with 415 (as the mock provider answers), not parsed as nothing and
// refused later as a missing field.
import express, { type RequestHandler } from 'express';
import { MAX_BODY_BYTES } from './request-schema.ts';

/** A 415 for the app's error middleware (body-errors.ts): its status and message are answered. */
class UnsupportedMediaType extends Error {
  readonly status = 415;
  readonly type = 'content.type';
}

/** Refuses a body that is not application/json (415), then parses it (strict JSON, at most MAX_BODY_BYTES). */
export function jsonBody(): RequestHandler[] {
  const requireJson: RequestHandler = (req, _res, next) => {
    // null: no body at all (the route's schema answers that); false: a body of another type.
    if (req.is('application/json') === false) next(new UnsupportedMediaType(`content-type must be application/json (got ${JSON.stringify(req.get('content-type') ?? '')})`));
    else next();
  };
  return [requireJson, express.json({ limit: MAX_BODY_BYTES, strict: true })];
}
