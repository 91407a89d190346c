// ADK's Gemini model pointed at a chosen provider base URL (the mock provider in tests and
// local runs) with an HTTP timeout: genai's fetch has none by default, so a hung provider
// would hang a branch forever.
import { Gemini } from '@google/adk';
import type { HttpOptions } from '@google/genai';

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
