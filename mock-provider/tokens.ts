// The token rules shared by both APIs. Input tokens: ceil(characters / 4) over every text
// part of the request, system instruction included (characters = JavaScript string length,
// i.e. UTF-16 code units). The instrumentation's estimateInputTokens implements the same
// rule independently. Output text is made of 4-character tokens, so the rule counts it exactly.
import { createRandom, hashString } from './random.ts';

export const CHARS_PER_TOKEN = 4;

export function tokensForCharacters(characters: number): number {
  return Math.ceil(characters / CHARS_PER_TOKEN);
}

// Three letters and a space: one token each.
const WORDS = (
  'the and for are but not you all any can had her was one our out day get has him his how man new now old see ' +
  'two way who boy did its let put say she too use ask big buy far few fit fun got key lot low map net pay raw ' +
  'run set sky top try war yes act add age ago aim air art bad bed bit box bus cut dry due end eye fix gap hot'
)
  .split(' ')
  .map((word) => `${word} `);

/**
 * `count` tokens of text, the same for the same (seed, prompt) in every run. Returned as an
 * array of tokens so a stream can cut chunks at token boundaries.
 */
export function outputTokens(seed: number, prompt: string, count: number): string[] {
  const random = createRandom(hashString(prompt, seed));
  const tokens = new Array<string>(count);
  for (let i = 0; i < count; i++) tokens[i] = WORDS[Math.floor(random() * WORDS.length)];
  return tokens;
}
