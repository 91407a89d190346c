// The token rules shared by both APIs. Input tokens: ceil(characters / 4) over every text
// part of the request, system instruction included (characters = JavaScript string length,
// i.e. UTF-16 code units). The instrumentation's estimateInputTokens implements the same
// rule independently. Output text is made of 4-character tokens, so the rule counts it exactly.
import { hash } from 'node:crypto';
import { createRandom } from './random.ts';

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
/**
 * 512 fixed phrases of 8 tokens: picking phrases, not words, makes long answers cheap to build.
 * Built with join so each phrase is a flat string (`+=` would leave a rope that every answer
 * using the phrase has to walk again).
 */
const PHRASES = (() => {
  const random = createRandom(0x5eed);
  return Array.from({ length: 512 }, () =>
    Array.from({ length: PHRASE_TOKENS }, () => WORDS[Math.floor(random() * WORDS.length)]).join(''),
  );
})();

/**
 * `count` tokens of text (exactly 4 * count characters; token i is characters 4i..4i+3),
 * the same for the same (seed, prompt) in every run.
 */
export function outputText(seed: number, prompt: string, count: number): string {
  return textForSeed(promptSeed(seed, prompt), count);
}

/** The text is a function of (prompt seed, count) only, so caching on those two is exact. */
function textForSeed(seed: number, count: number): string {
  const key = `${seed}:${count}`;
  const cached = recentTexts.get(key);
  if (cached !== undefined) return cached;
  const text = buildText(seed, count);
  recentTexts.set(key, text);
  return text;
}

/** `count` tokens drawn from the phrase and word tables with a generator seeded by `promptSeed` (uncached). */
export function buildText(seed: number, count: number): string {
  const random = createRandom(seed);
  const parts: string[] = [];
  let left = count;
  for (; left >= PHRASE_TOKENS; left -= PHRASE_TOKENS) parts.push(PHRASES[Math.floor(random() * PHRASES.length)]);
  for (; left > 0; left--) parts.push(WORDS[Math.floor(random() * WORDS.length)]);
  return parts.join(''); // a flat string serializes faster than a concatenation rope
}

/**
 * Recently generated texts: a load test that replays the same documents with a fixed output
 * length asks for the same text again and again. Bounded in entries and in characters; the
 * oldest entry goes first (a hit does not reorder: that would cost more than it saves here).
 */
export class RecentTexts {
  readonly #maxEntries: number;
  readonly #maxCharacters: number;
  #texts = new Map<string, string>();
  #characters = 0;

  constructor(maxEntries = 256, maxCharacters = 4 * 1024 * 1024) {
    this.#maxEntries = maxEntries;
    this.#maxCharacters = maxCharacters;
  }

  get size(): number {
    return this.#texts.size;
  }

  get characters(): number {
    return this.#characters;
  }

  get(key: string): string | undefined {
    return this.#texts.get(key);
  }

  set(key: string, text: string): void {
    if (text.length > this.#maxCharacters / 16) return; // a huge answer would push out everything else
    if (this.#texts.has(key)) return; // same key, same text: the text is a function of the key
    this.#texts.set(key, text);
    this.#characters += text.length;
    while (this.#texts.size > this.#maxEntries || this.#characters > this.#maxCharacters) {
      const [oldest, old] = this.#texts.entries().next().value as [string, string]; // Map order: oldest first
      this.#texts.delete(oldest);
      this.#characters -= old.length;
    }
  }
}

export const recentTexts = new RecentTexts();

/** 32 bits from (seed, prompt); native SHA-1 is several times faster than a JS loop over long prompts. */
export function promptSeed(seed: number, prompt: string): number {
  return ((hash('sha1', prompt, 'buffer') as Buffer).readUInt32LE(0) ^ Math.imul(seed, 0x9e3779b1)) >>> 0;
}
