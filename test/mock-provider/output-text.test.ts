// Output text: unchanged by the cache (pinned digests), a function of (seed, prompt, count),
// and the cache of recent texts stays within its bounds.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildText, outputText, promptSeed, RecentTexts, recentTexts, tokensForCharacters } from '../../mock-provider/tokens.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('output text', () => {
  it('is the same text as before the cache existed (digests pinned from the uncached version)', () => {
    const pinned: [number, string, number, string][] = [
      [1, 'hello', 1, 'c64ada3cbce0b3274e7bcd111dff169103d88c27da36cde22c70b14bf87dbfd7'],
      [1, 'Review this document. '.repeat(200), 800, '939275cb9e48ee880b4f1c00aba9f6bf59df653b466a0f8d6c2eb52c69f69bda'],
      [7, 'héllo ☃ wörld', 803, 'b28480a28573b04ba09dc35bc0b0d8d51d6ad5e7151739b402940f6b795d76ac'],
      [-5, '', 37, '466bcb6f534b49f5f79a425bb70a8f98d098a8cd96c22265cd0ebb7dca6cb365'],
    ];
    for (const [seed, prompt, count, digest] of pinned) {
      expect(sha256(outputText(seed, prompt, count))).toBe(digest); // first call: generated
      expect(sha256(outputText(seed, prompt, count))).toBe(digest); // second call: from the cache
    }
  });

  it('a cached answer equals a freshly built one, and counts exactly `count` tokens', () => {
    fc.assert(
      fc.property(fc.integer(), fc.string({ maxLength: 200 }), fc.integer({ min: 1, max: 2000 }), (seed, prompt, count) => {
        const first = outputText(seed, prompt, count);
        const again = outputText(seed, prompt, count);
        expect(again).toBe(first);
        expect(first).toBe(buildText(promptSeed(seed, prompt), count));
        expect(first.length).toBe(4 * count);
        expect(tokensForCharacters(first.length)).toBe(count);
      }),
      { numRuns: 300 },
    );
  });

  it('different prompts or seeds give different texts', () => {
    expect(outputText(1, 'a prompt', 50)).not.toBe(outputText(1, 'another prompt', 50));
    expect(outputText(1, 'a prompt', 50)).not.toBe(outputText(2, 'a prompt', 50));
    expect(recentTexts.size).toBeGreaterThan(0);
  });
});

describe('RecentTexts', () => {
  it('keeps at most maxEntries texts and maxCharacters characters, and only the text set for a key', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 16, max: 400 }),
        fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 20, maxLength: 20 }),
        fc.array(fc.integer({ min: 0, max: 19 }), { maxLength: 80 }),
        (maxEntries, maxCharacters, lengths, writes) => {
          // As in the real use, a key always stands for the same text.
          const textOf = (key: number) => String.fromCharCode(97 + key).repeat(lengths[key]);
          const cache = new RecentTexts(maxEntries, maxCharacters);
          for (const key of writes) {
            cache.set(`k${key}`, textOf(key));
            expect(cache.size).toBeLessThanOrEqual(maxEntries);
            expect(cache.characters).toBeLessThanOrEqual(maxCharacters);
            const kept = lengths[key] <= maxCharacters / 16;
            expect(cache.get(`k${key}`)).toBe(kept ? textOf(key) : undefined); // the newest entry is never the one evicted
          }
          let characters = 0;
          for (let key = 0; key < lengths.length; key++) {
            const got = cache.get(`k${key}`);
            if (got !== undefined) {
              expect(got).toBe(textOf(key));
              characters += got.length;
            }
          }
          expect(cache.characters).toBe(characters);
        },
      ),
    );
  });

  it('does not keep a text larger than a sixteenth of the character budget', () => {
    const cache = new RecentTexts(10, 160);
    cache.set('big', 'x'.repeat(11));
    cache.set('small', 'x'.repeat(10));
    expect(cache.get('big')).toBeUndefined();
    expect(cache.get('small')).toBe('x'.repeat(10));
  });

  it('evicts the oldest entry when full', () => {
    const cache = new RecentTexts(2, 1000);
    cache.set('a', 'aa');
    cache.set('b', 'bb');
    cache.get('a');
    cache.set('c', 'cc');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toBe('bb');
    expect(cache.get('c')).toBe('cc');
  });
});
