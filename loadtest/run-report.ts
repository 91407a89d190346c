// What a run leaves in its folder beside k6's files: plan vs measured (plan-vs-measured.json),
// the run record (summary.json) and the report page (index.html), from what the run measured
// and what the Prometheus that saw it gave (read before, by collectRun: nothing here queries).
import { join } from 'node:path';
import { replaceFile } from '../shared/replace-files.ts';
import { type RunRecord, writeRunRecord } from './report/run-record.ts';
import { reportData, writeReportPage } from './report/write.ts';
import type { CollectedReport, Driven } from './run-collect.ts';
import type { Measured } from './run-measure.ts';
import type { ScenarioFile } from './scenario/types.ts';

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

/** Writes plan-vs-measured.json, summary.json, then the report, then summary.json again naming the report. */
export function recordRun(r: RecordInput, driven: Driven, m: Measured, report: CollectedReport): Recorded {
  if (m.comparison) replaceFile(join(r.reportDir, 'plan-vs-measured.json'), JSON.stringify(m.comparison, null, 2));
  const { range, rateInterval } = report;
  const record: RunRecord = {
    runId: r.runId,
    scenario: r.scenario.name,
    flags: r.parameters,
    agent: r.agent,
    range,
    rateInterval,
    k6ExitCode: driven.exitCode,
    failure: m.failure,
    k6: m.summary,
    stack: m.totals,
    planVsMeasured: m.comparison,
    processes: r.processes,
    probeSamples: driven.probe?.samples,
  };
  writeRunRecord(r.reportDir, record);
  const page = reportData(
    {
      prometheusUrl: r.prometheusUrl,
      ...range,
      reportDir: r.reportDir,
      runId: r.runId,
      rateInterval,
      probeSamples: record.probeSamples,
      parameters: { scenario: r.scenario.name, ...record.flags },
      totals: m.totals,
      k6: m.summary,
      planVsMeasured: m.comparison,
    },
    report.figures,
  );
  const { path } = writeReportPage(r.reportDir, page);
  return { reportPath: path, recordPath: writeRunRecord(r.reportDir, { ...record, report: path }) };
}
