// The Gemini request bodies: zod schemas (the contract, and the source of the field-naming
// 400 errors) plus a structural check for the common shape, which accepts only bodies the
// schema accepts and skips zod's cost on the hot path; anything else goes through zod.
import { z } from 'zod';
import { parseBody, toolSchema } from './http.ts';

const partSchema = z.looseObject({ text: z.string().optional() });
const contentSchema = z.looseObject({ role: z.string().optional(), parts: z.array(partSchema).min(1) });
const functionDeclarationSchema = z.looseObject({
  name: z.string().min(1),
  parameters: toolSchema.optional(),
  parametersJsonSchema: toolSchema.optional(),
});
export const generateRequestSchema = z.looseObject({
  contents: z.array(contentSchema).min(1, 'contents must hold at least one content'),
  systemInstruction: z.looseObject({ parts: z.array(partSchema) }).optional(),
  tools: z.array(z.looseObject({ functionDeclarations: z.array(functionDeclarationSchema).optional() })).optional(),
  generationConfig: z
    .looseObject({ maxOutputTokens: z.number().int().positive().optional(), candidateCount: z.literal(1).optional() })
    .optional(),
});
export type GenerateRequest = z.infer<typeof generateRequestSchema>;
export const countTokensRequestSchema = z.union([
  z.looseObject({ contents: z.array(contentSchema).min(1) }),
  z.looseObject({ generateContentRequest: generateRequestSchema }),
]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isPartList(value: unknown, minLength: number): boolean {
  if (!Array.isArray(value) || value.length < minLength) return false;
  for (const part of value) {
    if (!isObject(part)) return false;
    if (part.text !== undefined && typeof part.text !== 'string') return false;
  }
  return true;
}

/**
 * True for the usual request (text contents, optional system instruction and generation
 * config, no tools) when it is valid. False does not mean invalid: zod then decides.
 */
export function hasCommonShape(body: unknown): body is GenerateRequest {
  if (!isObject(body) || body.tools !== undefined) return false;
  const { contents, systemInstruction, generationConfig } = body;
  if (!Array.isArray(contents) || contents.length === 0) return false;
  for (const content of contents) {
    if (!isObject(content) || (content.role !== undefined && typeof content.role !== 'string')) return false;
    if (!isPartList(content.parts, 1)) return false;
  }
  if (systemInstruction !== undefined && !(isObject(systemInstruction) && isPartList(systemInstruction.parts, 0))) return false;
  if (generationConfig !== undefined) {
    if (!isObject(generationConfig)) return false;
    const { maxOutputTokens, candidateCount } = generationConfig;
    if (maxOutputTokens !== undefined && !(Number.isSafeInteger(maxOutputTokens) && (maxOutputTokens as number) > 0)) return false;
    if (candidateCount !== undefined && candidateCount !== 1) return false;
  }
  return true;
}

/** A valid GenerateContentRequest, or HttpProblem 400 naming every bad field. */
export function parseGenerateRequest(body: unknown): GenerateRequest {
  return hasCommonShape(body) ? body : parseBody(generateRequestSchema, body, 'GenerateContentRequest');
}
