// The structural fast check for Gemini bodies never accepts what the zod schema rejects,
// accepts the usual valid requests (so the hot path really skips zod), and bad bodies still
// get the field-naming 400 from zod.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateRequestSchema, hasCommonShape, parseGenerateRequest } from '../../mock-provider/gemini-request.ts';
import { HttpProblem } from '../../mock-provider/http.ts';

/** Mostly well-formed pieces with occasional wrong types, so both verdicts come up often. */
const sometimesWrong = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: fc.jsonValue() });
const part = sometimesWrong(fc.record({ text: sometimesWrong(fc.string()) }, { requiredKeys: [] }));
const parts = sometimesWrong(fc.array(part, { maxLength: 3 }));
const content = sometimesWrong(fc.record({ role: sometimesWrong(fc.constantFrom('user', 'model')), parts }, { requiredKeys: ['parts'] }));
const requestBody = sometimesWrong(
  fc.record(
    {
      contents: sometimesWrong(fc.array(content, { maxLength: 3 })),
      systemInstruction: sometimesWrong(fc.record({ parts })),
      generationConfig: sometimesWrong(
        fc.record(
          {
            maxOutputTokens: sometimesWrong(fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -5, max: 5000 }) }, { weight: 1, arbitrary: fc.double() })),
            candidateCount: sometimesWrong(fc.constantFrom(1, 1, 1, 0, 2)),
            temperature: fc.double({ min: 0, max: 2, noNaN: true }),
          },
          { requiredKeys: [] },
        ),
      ),
    },
    { requiredKeys: ['contents'] },
  ).chain((body) =>
    // Now and then with tools, which the fast check always leaves to zod.
    fc.constantFrom(body, body, body, { ...body, tools: [{ functionDeclarations: [{ name: 'lookup' }] }] }),
  ),
);
/** Bodies as they arrive: JSON text parsed (no undefined, no NaN). */
const asReceived = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? 'null');

describe('GenerateContentRequest fast check', () => {
  it('accepts only bodies the zod schema accepts, and then parses them the same way', () => {
    let accepted = 0;
    fc.assert(
      fc.property(requestBody, (generated) => {
        const body = asReceived(generated);
        if (hasCommonShape(body)) {
          accepted++;
          const viaZod = generateRequestSchema.safeParse(body);
          expect(viaZod.success).toBe(true);
          expect(parseGenerateRequest(body)).toEqual(viaZod.data);
        }
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(40); // the generator does reach the fast path
  });

  it('takes the usual request (text parts, system instruction, generation config) without zod', () => {
    const body = {
      contents: [{ role: 'user', parts: [{ text: 'hello' }] }],
      systemInstruction: { parts: [{ text: 'be brief' }] },
      generationConfig: { maxOutputTokens: 100, temperature: 0.2 },
    };
    expect(hasCommonShape(body)).toBe(true);
    expect(parseGenerateRequest(body)).toBe(body); // same object: zod (which copies) was skipped
  });

  it('leaves tools and any invalid body to zod, which names the field', () => {
    expect(hasCommonShape({ contents: [{ parts: [{ text: 'x' }] }], tools: [] })).toBe(false);
    const bad: [unknown, RegExp][] = [
      [{ contents: [] }, /invalid GenerateContentRequest: contents: contents must hold at least one content/],
      [{ contents: [{ parts: [{ text: 5 }] }] }, /contents\.0\.parts\.0\.text/],
      [{ contents: [{ parts: [] }] }, /contents\.0\.parts/],
      [{ contents: [{ parts: [{ text: 'x' }] }], generationConfig: { maxOutputTokens: 0 } }, /generationConfig\.maxOutputTokens/],
      [{ contents: [{ parts: [{ text: 'x' }] }], generationConfig: { candidateCount: 2 } }, /generationConfig\.candidateCount/],
      [{ contents: [{ parts: [{ text: 'x' }] }], systemInstruction: 'be brief' }, /systemInstruction/],
      [[{ contents: [] }], /\(body\)/],
    ];
    for (const [body, message] of bad) {
      expect(hasCommonShape(body)).toBe(false);
      let thrown: unknown;
      try {
        parseGenerateRequest(body);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(HttpProblem);
      expect((thrown as HttpProblem).status).toBe(400);
      expect((thrown as HttpProblem).message).toMatch(message);
    }
  });
});
