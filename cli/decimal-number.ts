// How every numeric flag reads its text: a plain decimal number only (digits, an optional
// sign, fraction and exponent). JavaScript's Number() also reads hex, octal and binary
// (`0x10` is 16), which no flag means.
import { z } from 'zod';

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The number a flag's text states in decimal, or NaN (hex such as `0x10`, words, blanks). */
export function decimalNumber(text: string): number {
  const trimmed = text.trim();
  return DECIMAL.test(trimmed) ? Number(trimmed) : Number.NaN;
}

/** A flag's number in a zod schema: a decimal text becomes its number; anything else stays text (and fails as "expected number"). */
export const decimalFlag = (schema: z.ZodNumber) => z.preprocess((value) => (typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value.trim()) : value), schema);
