// Converts the agent service's JSON-lines access log into a replayable trace (one
// TraceRecord per line, times relative to the first request). An access-log line needs a
// time (`time` ISO string or `ts` epoch ms), the `tree`, and the document size
// (`documentChars`, or `inputTokensPerCall`); `trafficClass` and `width` are kept when
// present. Lines that are not requests to a tree (no `tree`) are skipped.
import { z } from 'zod';
import { INSTRUCTION_TOKENS } from './document.ts';
import { jsonLines, ScenarioError, treeNameSchema } from './schema.ts';
import type { TraceRecord } from './types.ts';

const accessLogLine = z.object({
  time: z.string().optional(),
  ts: z.number().optional(),
  tree: treeNameSchema,
  documentChars: z.number().int().min(0).optional(),
  inputTokensPerCall: z.number().int().positive().optional(),
  trafficClass: z.enum(['interactive', 'batch']).optional(),
  width: z.number().int().positive().nullish(),
});

/** Input tokens per call for a document of `chars` characters: ceil(chars/4) + the instruction. */
export function tokensForDocumentChars(chars: number): number {
  return Math.ceil(chars / 4) + INSTRUCTION_TOKENS;
}

export function convertAccessLog(text: string, source = 'access log'): TraceRecord[] {
  const entries: { t: number; rec: Omit<TraceRecord, 'at'> }[] = [];
  for (const { at, value } of jsonLines(text, source)) {
    if (typeof value !== 'object' || value === null || !('tree' in value)) continue;
    const r = accessLogLine.safeParse(value);
    if (!r.success) throw new ScenarioError(source, `${at}.${r.error.issues[0].path.join('.')}`, r.error.issues[0].message);
    const d = r.data;
    const t = d.ts ?? (d.time ? Date.parse(d.time) : Number.NaN);
    if (!Number.isFinite(t)) throw new ScenarioError(source, `${at}.time`, 'needs an ISO `time` or an epoch-ms `ts`');
    const tokens = d.inputTokensPerCall ?? (d.documentChars !== undefined ? tokensForDocumentChars(d.documentChars) : undefined);
    if (tokens === undefined) throw new ScenarioError(source, `${at}.documentChars`, 'needs documentChars or inputTokensPerCall');
    entries.push({
      t,
      rec: { tree: d.tree, inputTokensPerCall: Math.max(101, tokens), trafficClass: d.trafficClass ?? 'interactive', ...(d.width ? { width: d.width } : {}) },
    });
  }
  entries.sort((a, b) => a.t - b.t);
  const t0 = entries[0]?.t ?? 0;
  return entries.map((e) => ({ at: Math.round(e.t - t0) / 1000, ...e.rec }));
}

export function toJsonLines(records: TraceRecord[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + (records.length ? '\n' : '');
}
