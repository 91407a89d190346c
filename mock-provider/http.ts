// Request plumbing shared by both APIs: a bounded JSON body reader whose failures carry the
// HTTP status and a readable message, and zod issue formatting for request bodies.
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';

/** A client error to answer in the API's own error format. */
export class HttpProblem extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
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
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
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
