// The body of POST /v1/agents/{tree}/run, validated at the boundary.
import { z } from 'zod';

export const MAX_DOCUMENT_CHARS = 200_000;
export const MAX_BRANCHES = 64;
export const MAX_WIDTH = 32;
/** Request bodies larger than this answer 413 (the document limit plus JSON overhead). */
export const MAX_BODY_BYTES = 256 * 1024;

export const runRequestSchema = z.object({
  /** The text the agents review. */
  document: z.string().min(1, 'must not be empty').max(MAX_DOCUMENT_CHARS),
  /** `wide`: at most this many branches of this request in flight at once (k). */
  width: z.int().min(1).max(MAX_WIDTH).default(4),
  /** `wide`: number of branches (N). */
  branches: z.int().min(1).max(MAX_BRANCHES).default(8),
  /** Reported back and recorded on the trace; k6 tags its metrics with it. */
  trafficClass: z.enum(['interactive', 'batch']).default('interactive'),
  userId: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[\w.@-]+$/, 'letters, digits, _ . @ - only')
    .default('anonymous'),
});

export type RunRequest = z.infer<typeof runRequestSchema>;

/** "width: Too big: expected int to be <=32; document: ..." : names every bad field. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'body'}: ${issue.message}`).join('; ');
}
