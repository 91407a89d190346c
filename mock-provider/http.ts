// Request plumbing shared by both APIs: a bounded JSON body reader whose failures carry the
// HTTP status and a readable message, and zod issue formatting for request bodies.
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import type { ApiName, MockMetrics } from './metrics.ts';

/** A client error to answer in the API's own error format. */
export class HttpProblem extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The client went away before its request body was complete: nobody to answer. */
export class ClientGone extends Error {
  override name = 'ClientGone';
  constructor(received: number, declared: number) {
    super(`client left before sending the whole request body (${received} of ${Number.isFinite(declared) ? declared : 'unknown'} bytes)`);
  }
}

/** Counted and logged as one line: a routine event for a server, not a fault of the mock. */
export function clientGone(metrics: MockMetrics, api: ApiName, error: ClientGone): void {
  metrics.incompleteRequests.inc({ api });
  console.error(`[mock-provider] ${api}: ${error.message}`);
}

/** Reads and parses a JSON body of at most maxBytes; 415 / 413 / 400 otherwise. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json(\s*;|$)/i.test(type)) {
    throw new HttpProblem(415, `content-type must be application/json (got ${type === '' ? 'none' : JSON.stringify(type)})`);
  }
  const tooLarge = () => new HttpProblem(413, `request body larger than the limit of ${maxBytes} bytes`);
  const declared = Number(req.headers['content-length']);
  if (declared > maxBytes) throw tooLarge();
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.resume(); // discard the rest; the answer closes the connection
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    let complete = false;
    req.once('end', () => {
      complete = true;
      resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    // A client that disconnects mid-body: 'error' (ECONNRESET, "aborted") and/or 'close' without 'end'.
    const gone = () => {
      if (!complete) reject(new ClientGone(size, declared));
    };
    req.once('error', gone);
    req.once('close', gone);
  });
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpProblem(400, `malformed JSON body: ${(error as Error).message}`);
  }
}

/** Parses a request body with a schema; 400 naming every bad field otherwise. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const fields = result.error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(body)'}: ${issue.message}`)
    .join('; ');
  throw new HttpProblem(400, `invalid ${what}: ${fields}`);
}

/** Deepest JSON nesting of a tool's parameter schema (a schema level is two: the node and its properties): far beyond real tools, shallow enough for the recursive argument sampler. */
export const MAX_SCHEMA_DEPTH = 128;

/** True when no object or array in `value` is nested more than `max` levels deep (checked without recursion). */
export function nestedAtMost(value: unknown, max: number): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const node of level) {
      if (typeof node !== 'object' || node === null) continue;
      if (depth >= max) return false;
      next.push(...Object.values(node));
    }
    level = next;
  }
  return true;
}

/** A tool's parameter schema, any JSON, at most MAX_SCHEMA_DEPTH levels deep. */
export const toolSchema = z.unknown().refine((value) => nestedAtMost(value, MAX_SCHEMA_DEPTH), `nested deeper than ${MAX_SCHEMA_DEPTH} levels`);
