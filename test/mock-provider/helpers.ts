// Shared by the mock-provider tests: a fake clock and a zero-latency config.
import type { Clock, MockConfigPatch } from '../../mock-provider/index.ts';

export class FakeClock implements Clock {
  ms: number;
  constructor(startMs = 1_800_000_000_000) {
    this.ms = startMs;
  }
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** No latency, a fixed output length: tests run at socket speed. */
export const instant: MockConfigPatch = {
  timeToFirstTokenMs: { kind: 'fixed', value: 0 },
  perOutputTokenMs: { kind: 'fixed', value: 0 },
  outputTokens: { kind: 'fixed', value: 20 },
};

export async function generate(
  url: string,
  text: string,
  options: { key?: string; model?: string; stream?: boolean } = {},
): Promise<Response> {
  const method = options.stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return fetch(`${url}/v1beta/models/${options.model ?? 'gemini-2.5-flash'}:${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': options.key ?? 'test-key' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text }] }] }),
  });
}

/** Google's error body, as the tests read it. */
export interface GoogleErrorBody {
  error: {
    code: number;
    status: string;
    message: string;
    details: { '@type': string; retryDelay?: string; violations: { quotaId: string; quotaValue: string }[] }[];
  };
}

export async function json<T = GoogleErrorBody>(response: Response): Promise<T> {
  return (await response.json()) as T;
}
