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

const PHRASE_TOKENS = 8;
/** 512 fixed phrases of 8 tokens: picking phrases, not words, makes long answers cheap to build. */
const PHRASES = (() => {
  const random = createRandom(0x5eed);
  return Array.from({ length: 512 }, () => {
    let phrase = '';
    for (let i = 0; i < PHRASE_TOKENS; i++) phrase += WORDS[Math.floor(random() * WORDS.length)];
    return phrase;
  });
})();

/**
 * `count` tokens of text (exactly 4 * count characters; token i is characters 4i..4i+3),
 * the same for the same (seed, prompt) in every run.
 */
export function outputText(seed: number, prompt: string, count: number): string {
  const random = createRandom(hashString(prompt, seed));
  let text = '';
  let left = count;
  for (; left >= PHRASE_TOKENS; left -= PHRASE_TOKENS) text += PHRASES[Math.floor(random() * PHRASES.length)];
  for (; left > 0; left--) text += WORDS[Math.floor(random() * WORDS.length)];
  return text;
}
