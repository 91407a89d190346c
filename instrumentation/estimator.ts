// How many tokens to reserve before a call. The input-token counting rule is shared with
// the mock provider (which implements it independently on the wire format):
//
//   input tokens = ceil(total characters of every text part of contents and
//                       systemInstruction / 4)
//
// "characters" are JavaScript string length (UTF-16 code units). Non-text parts (inline
// data, function calls) count 0.
//
// The built-in estimator adds what each agent's recent calls counted beyond that rule's
// input, learned per agent: a high quantile over a sliding window, capped by the budget's
// capacity. Counting total tokens, that is the output (starting from a configured value);
// counting input (Gemini's TPM), it is the provider's promptTokenCount beyond the rule
// (starting from 0), so the reservation is the request's input and output is never reserved.
import type { LlmRequest } from '@google/adk';
import { type CountedTokens, countsOutput } from './counted-tokens.ts';
import { z } from 'zod';
import { DEFAULT_COUNTED_TOKENS, DEFAULT_ESTIMATE_WINDOW, DEFAULT_INITIAL_OUTPUT_TOKENS, DEFAULT_OUTPUT_QUANTILE } from './defaults.ts';
import { parseOptions } from './limiter-options.ts';

interface PartLike {
  text?: unknown;
}

function textLength(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) {
    let total = 0;
    for (const item of value) total += textLength(item);
    return total;
  }
  if (value && typeof value === 'object') {
    const parts = (value as { parts?: unknown }).parts;
    if (Array.isArray(parts)) return textLength(parts);
    const text = (value as PartLike).text;
    return typeof text === 'string' ? text.length : 0;
  }
  return 0;
}

/** The input-token counting rule: ceil(characters of all text parts incl. systemInstruction / 4). */
export function estimateInputTokens(request: Pick<LlmRequest, 'contents' | 'config'>): number {
  const chars = textLength(request.contents ?? []) + textLength(request.config?.systemInstruction);
  return Math.ceil(chars / 4);
}

/** What the wrapper asks before reserving, and tells after the provider reported usage. */
export interface TokenEstimator {
  estimate(request: LlmRequest, agent: string): number;
  /** actualTokens: the provider's reported usage for the call, in the budget's counted tokens. */
  observe?(request: LlmRequest, agent: string, actualTokens: number): void;
}

export interface UsageEstimatorOptions {
  /** The budget's counted tokens (default DEFAULT_COUNTED_TOKENS): input-only reserves no output. */
  readonly countedTokens?: CountedTokens;
  /** Output tokens assumed for an agent before any usage was seen, when output counts (default DEFAULT_INITIAL_OUTPUT_TOKENS, 1000). */
  readonly initialOutputTokens?: number;
  /** Quantile of recent output usage to reserve (default DEFAULT_OUTPUT_QUANTILE, 0.95). */
  readonly quantile?: number;
  /** Calls remembered per agent (default DEFAULT_ESTIMATE_WINDOW, 100). */
  readonly window?: number;
  /** Upper bound of any estimate, usually the budget's capacity. */
  readonly maxTokens?: number;
}

/** The learning's numbers (initialOutputTokens is 0 when output does not count, whatever was given). */
const estimatorOptionsSchema = z.object({
  initialOutputTokens: z.number().min(0),
  quantile: z.number().gt(0).max(1).default(DEFAULT_OUTPUT_QUANTILE),
  window: z.number().min(1).default(DEFAULT_ESTIMATE_WINDOW),
});

/** Input by the counting rule + a learned per-agent quantile of the rest of the counted usage. */
export class UsageEstimator implements TokenEstimator {
  readonly countedTokens: CountedTokens;
  readonly initialOutputTokens: number;
  readonly quantile: number;
  readonly window: number;
  readonly maxTokens: number;
  readonly #samples = new Map<string, number[]>();
  readonly #inputOf = new WeakMap<object, number>();

  constructor(options: UsageEstimatorOptions = {}) {
    this.countedTokens = options.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    const initialOutputTokens = countsOutput(this.countedTokens) ? (options.initialOutputTokens ?? DEFAULT_INITIAL_OUTPUT_TOKENS) : 0;
    const checked = parseOptions('UsageEstimator', estimatorOptionsSchema, { ...options, initialOutputTokens });
    this.initialOutputTokens = checked.initialOutputTokens;
    this.quantile = checked.quantile;
    this.window = checked.window;
    this.maxTokens = options.maxTokens ?? Number.POSITIVE_INFINITY;
  }

  /** The learned estimate beyond the rule's input for an agent (the configured start until usage is seen). */
  outputEstimate(agent: string): number {
    const samples = this.#samples.get(agent);
    if (!samples || samples.length === 0) return this.initialOutputTokens;
    const sorted = [...samples].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil(this.quantile * sorted.length) - 1)];
  }

  estimate(request: LlmRequest, agent: string): number {
    const input = estimateInputTokens(request);
    this.#inputOf.set(request, input);
    return Math.min(this.maxTokens, input + this.outputEstimate(agent));
  }

  observe(request: LlmRequest, agent: string, actualTokens: number): void {
    const input = this.#inputOf.get(request) ?? estimateInputTokens(request);
    let samples = this.#samples.get(agent);
    if (!samples) {
      samples = [];
      this.#samples.set(agent, samples);
    }
    samples.push(Math.max(0, actualTokens - input));
    if (samples.length > this.window) samples.shift();
  }
}
