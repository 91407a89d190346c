// summary.json: what a run (npm start, loadtest) records about itself in its folder, so the
// report can be made again later from the folder and the Prometheus that scraped the run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { replaceFile } from '../../shared/replace-files.ts';
import { redactUrlsInValue } from '../../instrumentation/redact-url.ts';
import { durationSeconds } from '../../dashboards/config.ts';
import type { K6Summary } from '../k6/summary.ts';
import type { ProbeSample } from '../measure/gauge-probe.ts';
import type { PlanVsMeasured } from '../measure/plan-vs-measured.ts';
import type { StackTotals } from './summary.ts';

export const RUN_RECORD_FILE = 'summary.json';

export interface RunRecord {
  runId: string;
  scenario: string;
  /** The run's parameters as given (flags, scenario description). */
  flags: Record<string, unknown>;
  /** The range the run's traffic covered, epoch ms. */
  range: { from: number; to: number };
  /** $__rate_interval the report used (about 4 scrape intervals of the run's Prometheus). */
  rateInterval: string;
  k6ExitCode?: number;
  k6?: K6Summary;
  stack?: StackTotals;
  planVsMeasured?: PlanVsMeasured | { skipped: string };
  /** Random-time samples of the permits in use (GaugeProbe), for the calls-in-flight panel. */
  probeSamples?: readonly ProbeSample[];
  [more: string]: unknown;
}

const recordSchema = z.looseObject({
  runId: z.string().min(1),
  scenario: z.string(),
  flags: z.record(z.string(), z.unknown()),
  range: z.object({ from: z.number().nonnegative(), to: z.number().nonnegative() }),
  rateInterval: z.string().refine((d) => durationSeconds(d) !== undefined, 'must be a Prometheus duration'),
  k6: z.looseObject({ requests: z.number(), durationMs: z.looseObject({}), permitWaitMs: z.looseObject({}), thresholds: z.array(z.unknown()) }).optional(),
  stack: z.looseObject({ acquireSeconds: z.looseObject({}), alertsFired: z.array(z.string()) }).optional(),
  probeSamples: z.array(z.object({ at: z.number(), value: z.number() })).max(1_000_000).optional(),
  planVsMeasured: z.union([z.looseObject({ skipped: z.string() }), z.looseObject({ rows: z.array(z.unknown()), window: z.looseObject({}) })]).optional(),
});

/** Writes summary.json (URLs in it without their credentials); a failure leaves the old one. */
export function writeRunRecord(reportDir: string, record: RunRecord): string {
  const path = join(reportDir, RUN_RECORD_FILE);
  replaceFile(path, runRecordText(record));
  return path;
}

/** summary.json's text: the record, URLs in it without their credentials. */
export function runRecordText(record: RunRecord): string {
  return JSON.stringify(redactUrlsInValue(record), null, 2);
}

/** The run record in `runDir`; throws naming the file and the field when it is missing or malformed. */
export function readRunRecord(runDir: string): RunRecord {
  const path = join(runDir, RUN_RECORD_FILE);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file (not a run folder)' : (error as Error).message}`);
  }
  const parsed = recordSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${path}: ${issue.path.join('.') || '(file)'}: ${issue.message}`);
  }
  return parsed.data as RunRecord;
}
