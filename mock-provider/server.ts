// startMockProvider: one express app on one port serving the Gemini (and Vertex AI) and
// OpenAI APIs, the admin API, a metadata-server token endpoint, /metrics and /healthz.
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { listen, stopAccepting } from '../agent/http-server.ts';
import { adminRouter } from './admin.ts';
import { defaultConfig, type MockConfigPatch, mergeConfig, parseServerLimits, type ServerLimitsInput } from './config.ts';
import { type GeminiHandler, geminiHandler } from './gemini.ts';
import { DEFAULT_HOST, DEFAULT_PORT } from './listen.ts';
import { metadataRouter } from './metadata.ts';
import { openAiRouter } from './openai.ts';
import type { Clock } from './quota.ts';
import { MockState } from './state.ts';

export interface MockProviderOptions {
  /** Default 8090; 0 picks a free port. */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Quota time in ms (default: wall clock with sub-ms precision); tests pass a fake one. */
  readonly clock?: Clock;
  /** When set, the admin API requires it (Bearer) from any address; else it answers loopback only. */
  readonly adminToken?: string;
  /** Headers/request/keep-alive timeouts and the connection cap (validated by serverLimitsSchema; defaults in agent/http-server.ts, shared with the agent app). */
  readonly limits?: ServerLimitsInput;
}

export interface MockProvider {
  /** e.g. http://127.0.0.1:8090 (no trailing slash): the base URL for genai, ADK and openai (+ /v1). */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly server: Server;
  /** Live configuration, quotas and metrics (what the admin API changes). */
  readonly state: MockState;
  close(): Promise<void>;
}

export const wallClock: Clock = { now: () => performance.timeOrigin + performance.now() };

export function createMockApp(state: MockState, adminToken: string | undefined, gemini: GeminiHandler = geminiHandler(state)): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', state.metrics.registry.contentType);
    res.send(await state.metrics.registry.metrics());
  });
  app.use(adminRouter(state, adminToken));
  app.use(metadataRouter());
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!gemini(req, res)) next();
  });
  app.use(openAiRouter(state));
  app.use((req: Request, res: Response) => {
    res.status(404).json({ error: { code: 404, message: `no route for ${req.method} ${req.path}`, status: 'NOT_FOUND' } });
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    console.error('[mock-provider] unexpected error:', error);
    if (res.headersSent) return void res.destroy();
    res.status(500).json({ error: { code: 500, message: 'internal error in the mock provider', status: 'INTERNAL' } });
  });
  return app;
}

/** Starts a mock provider; `config` is merged over the defaults and validated (throws ConfigError). */
export async function startMockProvider(config: MockConfigPatch = {}, options: MockProviderOptions = {}): Promise<MockProvider> {
  const limits = parseServerLimits(options.limits);
  const state = new MockState(mergeConfig(defaultConfig, config), options.clock ?? wallClock);
  const gemini = geminiHandler(state);
  const app = createMockApp(state, options.adminToken, gemini);
  // Gemini model calls (the hot path) skip express; everything else goes through the app.
  const host = options.host ?? DEFAULT_HOST;
  const { server, port, url } = await listen(
    (req, res) => {
      if (!gemini(req, res)) app(req, res);
    },
    options.port ?? DEFAULT_PORT,
    host,
    limits,
  );
  return {
    url,
    port,
    host,
    server,
    state,
    close: () => {
      const closed = stopAccepting(server);
      server.closeAllConnections(); // ends streams, stalls and keep-alive sockets too
      return closed;
    },
  };
}
