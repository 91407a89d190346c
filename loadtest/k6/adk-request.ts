// What the load test sends to an ADK API server, as pure functions (the k6 script and Node
// tests share them): the routes under an optional base path, and the /run body.
import type { AdkTarget } from '../scenario/types.ts';

export interface AdkRoutes {
  /** POST here with `{}` to create a session; the answer's `id` is the session id. */
  sessions: string;
  /** POST /run, or /run_sse when the scenario streams. */
  run: string;
  /** URL-free names for k6's `name` tag (one series per route, not per user). */
  sessionsName: string;
  runName: string;
  /** The `name` tag of `DELETE {sessions}/{id}`, sent when the request is done with its session. */
  deleteSessionName: string;
  sse: boolean;
}

export function adkRoutes(target: string, adk: AdkTarget, userId: string): AdkRoutes {
  const base = `${target}${adk.basePath ?? ''}`;
  const sse = adk.streaming === true;
  const route = sse ? '/run_sse' : '/run';
  const sessions = `/apps/${encodeURIComponent(adk.app)}/users/${encodeURIComponent(userId)}/sessions`;
  return {
    sessions: `${base}${sessions}`,
    run: `${base}${route}`,
    sessionsName: `POST ${adk.basePath ?? ''}/apps/${adk.app}/users/:user/sessions`,
    runName: `POST ${adk.basePath ?? ''}${route}`,
    deleteSessionName: `DELETE ${adk.basePath ?? ''}/apps/${adk.app}/users/:user/sessions/:session`,
    sse,
  };
}

/** The URL of one session, under the routes' sessions URL (GET reads it, DELETE removes it). */
export function sessionUrl(routes: Pick<AdkRoutes, 'sessions'>, sessionId: string): string {
  return `${routes.sessions}/${encodeURIComponent(sessionId)}`;
}

/** The user message: the scenario's template with the document in place of `{document}`. */
export function messageText(template: string | undefined, document: string): string {
  return template === undefined ? document : template.split('{document}').join(document);
}

/** The /run and /run_sse body; camelCase, which every ADK server accepts (Java and JS need it). */
export function runBody(adk: AdkTarget, userId: string, sessionId: string, document: string): string {
  return JSON.stringify({
    appName: adk.app,
    userId,
    sessionId,
    newMessage: { role: 'user', parts: [{ text: messageText(adk.message, document) }] },
    streaming: adk.streaming === true,
  });
}
