// A stand-in for the GCE metadata server's token endpoint, so an unmodified Vertex AI
// client using Application Default Credentials gets an access token offline: point
// google-auth-library at the mock with GCE_METADATA_HOST=127.0.0.1:<port>. The token is
// a fixed string; the Vertex routes accept any Bearer token and keep quotas per project.
import { type Request, type Response, Router } from 'express';

export const METADATA_TOKEN = 'mock-provider-access-token';
const FLAVOR = 'metadata-flavor';
// Tokens from the metadata server live about an hour.
const TOKEN_SECONDS = 3599;

function flavoured(handler: (req: Request, res: Response) => void) {
  return (req: Request, res: Response) => {
    res.setHeader(FLAVOR, 'Google');
    // The real server refuses requests without the header (a guard against SSRF).
    if (req.headers[FLAVOR] !== 'Google') return void res.status(403).type('text/plain').send('Missing Metadata-Flavor:Google header.');
    handler(req, res);
  };
}

export function metadataRouter(): Router {
  const router = Router();
  // Python's and Java's auth libraries probe the host's root; other callers of / get the 404 as before.
  router.get('/', (req, res, next) => {
    if (req.headers[FLAVOR] !== 'Google') return next();
    res.setHeader(FLAVOR, 'Google');
    res.type('text/plain').send('');
  });
  // Node's probe: any answer with the flavour header means "on GCE".
  router.get(['/computeMetadata/v1/instance', '/computeMetadata/v1/instance/'], flavoured((_req, res) => void res.type('text/plain').send('')));
  router.get(
    '/computeMetadata/v1/instance/service-accounts/:account/token',
    flavoured((_req, res) => void res.json({ access_token: METADATA_TOKEN, expires_in: TOKEN_SECONDS, token_type: 'Bearer' })),
  );
  return router;
}
