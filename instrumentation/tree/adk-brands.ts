// Recognises ADK classes by the brands ADK stamps on them (properties keyed by
// Symbol.for('google.adk.…')), never by instanceof: a user's module may bring its own copy of
// @google/adk, whose classes are not this copy's. ADK exports most of its checks; the
// Gemini one it keeps private, so it is restated here against the same brand.
import type { Gemini } from '@google/adk';

export {
  isAgentTool,
  isBaseAgent,
  isLlmAgent,
  isLoopAgent,
  isParallelAgent,
  isRunnableRoot,
  isSequentialAgent,
  isWorkflow,
} from '@google/adk';

/** The brand @google/adk's Gemini class carries (models/google_llm.js). */
const GEMINI_BRAND = Symbol.for('google.adk.geminiModel');

/** True for an ADK Gemini model from any copy of @google/adk. */
export function isGemini(value: unknown): value is Gemini {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[GEMINI_BRAND] === true;
}
