// Which of a call's tokens count against a token quota. Gemini's tokens-per-minute quota
// counts input (prompt) tokens only; other providers count input + output. A budget's
// unit is its counted tokens: what it reserves, what it reconciles to, and the
// llm_limiter_tokens_* counters are all in that unit, so reserved-vs-actual compares like
// with like.
import { z } from 'zod';

/** Token usage the provider reported for a call. */
export interface Usage {
  readonly total: number;
  readonly input?: number;
  readonly output?: number;
}

export const COUNTED_TOKEN_KINDS = ['input', 'total'] as const;
export type CountedTokenKind = (typeof COUNTED_TOKEN_KINDS)[number];

/** `input` (Gemini's TPM), `total` (input + output), or a function of the usage. */
export type CountedTokens = CountedTokenKind | ((usage: Usage) => number);

export const countedTokensSchema = z.union([z.enum(COUNTED_TOKEN_KINDS), z.function()]);

/** What a function of usage may give: a finite number of tokens, >= 0. */
const countedTokensValue = z.number().min(0);

/** The tokens of `usage` that count, or undefined when the provider did not report them. */
export function countTokens(counted: CountedTokens, usage: Usage | undefined): number | undefined {
  if (!usage) return undefined;
  if (counted === 'total') return usage.total;
  if (counted === 'input') return usage.input;
  const tokens = counted(usage);
  if (!countedTokensValue.safeParse(tokens).success) throw new RangeError(`countedTokens gave ${tokens}, need a finite number >= 0`);
  return tokens;
}

/** Whether output tokens may count (a function of usage may count them). */
export function countsOutput(counted: CountedTokens): boolean {
  return counted !== 'input';
}

/** Whether input tokens certainly count (`input` or `total`; a function of usage may not count them). */
export function countsInput(counted: CountedTokens): boolean {
  return counted === 'input' || counted === 'total';
}
