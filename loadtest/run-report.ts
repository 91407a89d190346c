// What a run leaves in its folder beside k6's files: plan vs measured (plan-vs-measured.json),
// the run record (summary.json) and the report page (index.html), from what the run measured
// and what the Prometheus that saw it gave (read before, by collectRun: nothing here queries).
import { rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { replaceFiles } from '../shared/replace-files.ts';
import { RUN_RECORD_FILE, type RunRecord, runRecordText } from './report/run-record.ts';
import { reportPage } from './report/write.ts';
import type { CollectedReport, Driven } from './run-collect.ts';
import type { Measured } from './run-measure.ts';
import type { ScenarioFile } from './scenario/types.ts';

/** Plan vs measured's file in the run folder. */
const PLAN_VS_MEASURED_FILE = 'plan-vs-measured.json';

/** The served module of a run against a user's agent, as the run record keeps it. */
export interface RunAgent {
  app: string;
  module: string;
  /** Model calls per request counted from the tree; null where they cannot be counted (why in countNote). */
  modelCallsPerRequest: number | null;
  countNote: string | undefined;
}

export interface RecordInput {
  runId: string;
  reportDir: string;
  scenario: ScenarioFile;
  prometheusUrl: string;
  parameters: Record<string, unknown>;
  agent: RunAgent | undefined;
  /** The processes the run started (a stack of its own). */
  processes: { name: string; pid: number | undefined }[] | undefined;
}

export interface Recorded {
  /** The report page written. */
  reportPath: string;
  /** The run record written. */
  recordPath: string;
}

/** Writes plan-vs-measured.json, summary.json (naming the report) and the report page, in one replace of the run folder's files. */
export function recordRun(r: RecordInput, driven: Driven, m: Measured, report: CollectedReport): Recorded {
  const { range, rateInterval } = report;
  const flags = r.parameters;
  const probeSamples = driven.probe?.samples;
  const page = reportPage(
    r.reportDir,
    {
      prometheusUrl: r.prometheusUrl,
      ...range,
      reportDir: r.reportDir,
      runId: r.runId,
      rateInterval,
      probeSamples,
      parameters: { scenario: r.scenario.name, ...flags },
      totals: m.totals,
      k6: m.summary,
      planVsMeasured: m.comparison,
    },
    report.figures,
  );
  const record: RunRecord = {
    runId: r.runId,
    scenario: r.scenario.name,
    flags,
    agent: r.agent,
    range,
    rateInterval,
    k6ExitCode: driven.exitCode,
    failure: m.failure,
    k6: m.summary,
    stack: m.totals,
    planVsMeasured: m.comparison,
    processes: r.processes,
    probeSamples,
    report: page.path,
  };
  const files = new Map<string, string>();
  if (m.comparison) files.set(PLAN_VS_MEASURED_FILE, JSON.stringify(m.comparison, null, 2));
  files.set(RUN_RECORD_FILE, runRecordText(record));
  files.set(basename(page.path), page.html);
  replaceFiles(r.reportDir, files);
  if (page.stale) rmSync(page.stale, { force: true });
  return { reportPath: page.path, recordPath: join(r.reportDir, RUN_RECORD_FILE) };
}
