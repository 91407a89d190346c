// ADK's Gemini model pointed at a chosen provider base URL (the mock provider in tests and
// local runs) with an HTTP timeout: genai's fetch has none by default, so a hung provider
// would hang a branch forever.
import { Gemini } from '@google/adk';
import type { HttpOptions } from '@google/genai';
import { redactUrl, redactUrlsIn } from '../instrumentation/redact-url.ts';

export interface ProviderModelOptions {
  /** Base URL of a Gemini-compatible REST API, e.g. http://127.0.0.1:8090. */
  providerUrl: string;
  apiKey: string;
  model: string;
  /** Per-HTTP-request timeout in milliseconds. */
  httpTimeoutMs: number;
}

export class ProviderGemini extends Gemini {
  readonly providerUrl: string;
  readonly httpTimeoutMs: number;

  constructor(options: ProviderModelOptions) {
    // vertexai: false so a stray GOOGLE_GENAI_USE_VERTEXAI in the environment cannot
    // silently send the calls somewhere else.
    super({ model: options.model, apiKey: options.apiKey, vertexai: false });
    this.providerUrl = options.providerUrl.replace(/\/+$/, '');
    this.httpTimeoutMs = options.httpTimeoutMs;
  }

  protected override getHttpOptions(): HttpOptions {
    return { ...super.getHttpOptions(), baseUrl: this.providerUrl, timeout: this.httpTimeoutMs };
  }
}

/** The environment variables ADK's Gemini reads its API key from, in its order. */
export const GEMINI_KEY_VARIABLES = ['GOOGLE_GENAI_API_KEY', 'GOOGLE_API_KEY', 'GEMINI_API_KEY'] as const;

/**
 * A module that builds `new Gemini({ model })` (or names a model ADK builds lazily) needs an
 * API key in the environment to load at all. Counting, planning and serving against the mock
 * need no real one: when the environment has none, ADK gets `key` (serve's --api-key, or a
 * placeholder the mock accepts). Returns whether it lent one.
 */
export function lendProviderKey(key: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (GEMINI_KEY_VARIABLES.some((name) => (env[name] ?? '') !== '')) return false;
  env.GOOGLE_GENAI_API_KEY = key;
  return true;
}

/** The key lent for counting and planning: the mock accepts any. */
export const PLACEHOLDER_PROVIDER_KEY = 'quotascope-local';

/** Why the provider cannot be reached at start (one line: the CLI exits 1 with it). */
export class ProviderUnreachableError extends Error {
  override name = 'ProviderUnreachableError';
}

/**
 * Checks that something answers HTTP at the provider's base URL (any status will do: the
 * mock, Gemini and a proxy all answer), trying again for `waitMs` (a provider started at the
 * same moment may not listen yet). Still nothing: a ProviderUnreachableError naming the URL
 * and the reason (refused, unknown host, no answer).
 */
export async function checkProviderReachable(providerUrl: string, waitMs = 10_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  // fetch refuses a URL with credentials: reach the host without them (the probe only needs an answer).
  const target = new URL(providerUrl);
  target.username = '';
  target.password = '';
  for (;;) {
    try {
      const res = await fetch(target, { signal: AbortSignal.timeout(Math.max(1_000, deadline - Date.now())), redirect: 'manual' });
      await res.body?.cancel();
      return;
    } catch (error) {
      if (Date.now() + 250 < deadline && (error as Error).name !== 'TimeoutError') {
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = (error as Error).name === 'TimeoutError' ? 'no answer' : (cause?.code ?? cause?.message ?? (error as Error).message);
      throw new ProviderUnreachableError(
        `provider ${redactUrl(providerUrl)} is unreachable (${redactUrlsIn(String(reason))}, for ${waitMs / 1000} s): start it (quotascope mock-provider) or pass --provider-url`,
      );
    }
  }
}
