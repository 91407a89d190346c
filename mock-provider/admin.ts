// Control while running: GET/PUT /admin/config, POST /admin/reset. Without an admin token
// the admin API answers loopback clients only; with one, every caller must present it.
import { timingSafeEqual } from 'node:crypto';
import { type NextFunction, type Request, type Response, Router } from 'express';
import { ConfigError } from './config.ts';
import { ClientGone, HttpProblem, readJsonBody } from './http.ts';
import type { MockState } from './state.ts';

const ADMIN_BODY_LIMIT = 1024 * 1024;

function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1' || (address?.startsWith('127.') ?? false);
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function sendAdminError(res: Response, status: number, message: string): void {
  res.status(status).json({ error: { code: status, message } });
}

function guard(adminToken: string | undefined) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (adminToken === undefined) {
      if (isLoopback(req.socket.remoteAddress)) return next();
      return sendAdminError(res, 403, 'the admin API answers loopback clients only (configure an admin token to allow others)');
    }
    const header = req.headers.authorization ?? '';
    const given = header.startsWith('Bearer ') ? header.slice(7) : String(req.headers['x-admin-token'] ?? '');
    if (given !== '' && sameSecret(given, adminToken)) return next();
    res.setHeader('www-authenticate', 'Bearer');
    sendAdminError(res, 401, 'admin token missing or wrong (send Authorization: Bearer <token>)');
  };
}

export function adminRouter(state: MockState, adminToken: string | undefined): Router {
  const router = Router();
  router.use('/admin', guard(adminToken));
  router.get('/admin/config', (_req, res) => {
    res.json(state.config);
  });
  router.put('/admin/config', async (req, res) => {
    try {
      const patch = await readJsonBody(req, ADMIN_BODY_LIMIT);
      res.json(state.update(patch));
    } catch (error) {
      // Nobody to answer; one line, as for the model APIs (not counted: those counters are per API).
      if (error instanceof ClientGone) return void console.error(`[mock-provider] admin: ${error.message}`);
      if (error instanceof HttpProblem) return sendAdminError(res, error.status, error.message);
      if (error instanceof ConfigError) return sendAdminError(res, 400, error.message);
      throw error;
    }
  });
  // The oracle's per-window record: what the provider counted in each quota window.
  router.get('/admin/quota/windows', (_req, res) => {
    const config = state.config;
    res.json({
      windowMs: config.quotaWindowMs,
      countedTokens: config.countedTokens,
      tokensPerWindow: config.tokensPerMinute,
      requestsPerWindow: config.requestsPerMinute,
      quotaScope: config.quotaScope,
      windows: state.quota.windows(config),
    });
  });
  router.post('/admin/reset', (_req, res) => {
    state.reset();
    res.json({ reset: true, config: state.config });
  });
  return router;
}
