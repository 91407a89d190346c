// `quotascope report --prometheus URL --from … --to …`: writes reports/<run-id>/index.html
// from a Prometheus that scraped a run (and, with --run-dir, the run's own record), and with
// --screenshots PNGs of it for the README and docs.
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { decimalFlag } from './decimal-number.ts';
import { describeFailure } from './errors.ts';
import { durationSeconds } from '../dashboards/config.ts';
import { readRunRecord, type RunRecord } from '../loadtest/report/run-record.ts';
import { SCREENSHOTS_DIR, takeScreenshots } from '../loadtest/report/screenshots.ts';
import { runIdFor } from '../loadtest/run-id.ts';
import { rateIntervalFor } from '../loadtest/measure/run-queries.ts';
import { writeReport } from '../loadtest/report/write.ts';

export const USAGE = `usage: quotascope report [flags]
  --prometheus URL     the Prometheus that scraped the run (default http://127.0.0.1:9090)
  --from TIME          start of the range: ISO 8601 (2026-12-01T09:00:00Z), epoch seconds, now or now-30m
                       (default: the run's start with --run-dir, else now-30m)
  --to TIME            end of the range, same forms (default: the run's end with --run-dir, else now)
  --run-dir DIR        a run folder (reports/<run-id>): its parameters, k6 summary and plan vs
                       measured go in the report, and index.html is written there
  --report-dir DIR     without --run-dir, the page goes to DIR/<run-id>/index.html (default reports)
  --run-id ID          without --run-dir, the folder name (default: the range start and "-report")
  --rate-interval D    the panels' $__rate_interval, e.g. 20s (default: 4 x the larger of the query
                       step and --scrape-interval, or the run's own with --run-dir)
  --scrape-interval S  the Prometheus scrape interval, seconds (default 5)
  --title TEXT         the page title
  --screenshots        also write screenshots/*.png (the page and each chart) with headless chromium`;

const MAX_RANGE_MS = 31 * 24 * 3600_000;

/** A time flag as epoch ms: ISO 8601, epoch seconds, `now` or `now-<Prometheus duration>`. */
export function parseTime(text: string, now: number): number | undefined {
  const relative = /^now(?:-(.+))?$/.exec(text);
  if (relative) {
    const seconds = relative[1] === undefined ? 0 : durationSeconds(relative[1]);
    return seconds === undefined ? undefined : now - seconds * 1000;
  }
  if (/^\d{9,11}(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text)) return undefined;
  const t = Date.parse(text);
  return Number.isFinite(t) ? t : undefined;
}

const timeFlag = z
  .string()
  .min(1)
  .refine((t) => parseTime(t, Date.now()) !== undefined, 'must be ISO 8601 (2026-12-01T09:00:00Z), epoch seconds, now or now-30m')
  .optional();

export const reportOptionsSchema = z
  .object({
    prometheus: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('http://127.0.0.1:9090'),
    from: timeFlag,
    to: timeFlag,
    'run-dir': z.string().min(1).optional(),
    'report-dir': z.string().min(1).default('reports'),
    'run-id': z.string().regex(/^[\w.-]{1,120}$/, 'letters, digits, . _ - only (it names a folder)').optional(),
    'rate-interval': z
      .string()
      .refine((d) => (durationSeconds(d) ?? 0) >= 1, 'must be a duration like 20s or 1m')
      .optional(),
    'scrape-interval': decimalFlag(z.number().positive().max(3600)).default(5),
    title: z.string().min(1).max(200).optional(),
    screenshots: z.boolean().default(false),
  })
  .strict();
export type ReportOptions = z.output<typeof reportOptionsSchema>;

/** Parses argv into the options; throws one line naming the flag. */
export function parseReportArgs(argv: string[]): ReportOptions | 'help' {
  const strings = Object.keys(reportOptionsSchema.shape).filter((k) => k !== 'screenshots');
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: { ...Object.fromEntries(strings.map((k) => [k, { type: 'string' as const }])), screenshots: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) return 'help';
  const { help: _help, ...rest } = values;
  const parsed = reportOptionsSchema.safeParse(rest);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`--${String(issue.path[0])}: ${issue.message}`);
  }
  return parsed.data;
}

/** Writes the report the options describe; returns the page's path, the screenshots and any problem. */
export async function runReport(o: ReportOptions, now = Date.now()): Promise<{ path: string; screenshots: string[]; problem?: string; kept?: string }> {
  const record: RunRecord | undefined = o['run-dir'] ? readRunRecord(o['run-dir']) : undefined;
  const from = o.from ? (parseTime(o.from, now) as number) : (record?.range.from ?? now - 30 * 60_000);
  const to = o.to ? (parseTime(o.to, now) as number) : (record?.range.to ?? now);
  if (to <= from) throw new Error(`--to: must be after --from (${new Date(from).toISOString()})`);
  if (to - from > MAX_RANGE_MS) throw new Error('--from: the range may span at most 31 days');
  const rateInterval = o['rate-interval'] ?? record?.rateInterval ?? rateIntervalFor(from, to, o['scrape-interval']);
  const runId = record?.runId ?? o['run-id'] ?? runIdFor('report', new Date(from));
  const reportDir = o['run-dir'] ? resolve(o['run-dir']) : resolve(o['report-dir'], runId);
  const { path, data, kept } = await writeReport({
    prometheusUrl: o.prometheus.replace(/\/$/, ''),
    from,
    to,
    reportDir,
    runId: record ? basename(reportDir) : runId,
    title: o.title,
    rateInterval,
    parameters: record ? { scenario: record.scenario, ...record.flags } : { from: new Date(from).toISOString(), to: new Date(to).toISOString(), rateInterval },
    totals: record?.stack,
    k6: record?.k6,
    planVsMeasured: record?.planVsMeasured,
    probeSamples: record?.probeSamples,
  });
  // Screenshots of a page that did not replace the good one would replace its screenshots.
  const screenshots = o.screenshots && kept === undefined ? await takeScreenshots(path, resolve(reportDir, SCREENSHOTS_DIR)) : [];
  return { path, screenshots, problem: data.problem?.message, kept };
}

/** `quotascope report`: exit 0 written, 1 written but Prometheus was down or had no data (or a run-time failure), 2 bad flags. */
export async function main(argv: string[]): Promise<number> {
  let options: ReportOptions | 'help';
  try {
    options = parseReportArgs(argv);
  } catch (error) {
    console.error(`report: ${describeFailure(error).line}`);
    return 2;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  try {
    const { path, screenshots, problem, kept } = await runReport(options);
    console.log(`report: ${path}`);
    for (const s of screenshots) console.log(`screenshot: ${s}`);
    if (problem) {
      console.error(`report: ${problem}${kept ? ` The page already there, ${kept}, is kept.` : ''}`);
      return 1;
    }
    return 0;
  } catch (error) {
    console.error(`report: ${(error as Error).message}`);
    return 1;
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
