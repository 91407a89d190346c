// Request documents sized in input tokens. The limiter and the mock count input tokens as
// ceil(chars / 4) over all text of a call, the agent's instruction included, so a document
// for N tokens per call has about (N - instruction) * 4 characters.

/** Tokens the agent's instruction and framing add to each call (measured on the review tree). */
export const INSTRUCTION_TOKENS = 100;

const WORDS = [
  'function', 'return', 'value', 'check', 'input', 'error', 'handler', 'request', 'quota',
  'branch', 'review', 'token', 'permit', 'limit', 'retry', 'buffer', 'stream', 'parse',
];

/** A deterministic pseudo-source document of exactly `chars` characters. */
export function documentOfChars(chars: number, seed = 1): string {
  const parts: string[] = [];
  let length = 0;
  let state = seed >>> 0 || 1;
  while (length < chars) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    const word = WORDS[state % WORDS.length];
    const piece = state % 11 === 0 ? `${word};\n` : `${word} `;
    parts.push(piece);
    length += piece.length;
  }
  return parts.join('').slice(0, chars);
}

/** A document that makes each model call of a tree about `inputTokensPerCall` input tokens. */
export function documentForTokens(inputTokensPerCall: number, seed = 1): string {
  return documentOfChars(Math.max(1, inputTokensPerCall - INSTRUCTION_TOKENS) * 4, seed);
}
