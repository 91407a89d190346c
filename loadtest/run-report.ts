// What a run leaves in its folder beside k6's files: plan vs measured (plan-vs-measured.json),
// the run record (summary.json) and the report page (index.html), from the Prometheus that saw the run.
import { join } from 'node:path';
import { replaceFile } from '../shared/replace-files.ts';
import { rateIntervalFor } from './report/collect.ts';
import { type RunRecord, writeRunRecord } from './report/run-record.ts';
import { writeReport } from './report/write.ts';
import type { Driven, Measured } from './run-measure.ts';
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
  /** The scrape interval of that Prometheus, seconds. */
  scrapeSeconds: number;
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
export async function recordRun(r: RecordInput, driven: Driven, m: Measured): Promise<Recorded> {
  if (m.comparison) replaceFile(join(r.reportDir, 'plan-vs-measured.json'), JSON.stringify(m.comparison, null, 2));
  const range = { from: driven.testStartedAt, to: Date.now() };
  const record: RunRecord = {
    runId: r.runId,
    scenario: r.scenario.name,
    flags: r.parameters,
    agent: r.agent,
    range,
    rateInterval: rateIntervalFor(range.from, range.to, r.scrapeSeconds),
    k6ExitCode: driven.exitCode,
    failure: m.failure,
    k6: m.summary,
    stack: m.totals,
    planVsMeasured: m.comparison,
    processes: r.processes,
    probeSamples: driven.probe?.samples,
  };
  writeRunRecord(r.reportDir, record);
  const { path } = await writeReport({
    prometheusUrl: r.prometheusUrl,
    ...range,
    reportDir: r.reportDir,
    runId: r.runId,
    rateInterval: record.rateInterval,
    probeSamples: record.probeSamples,
    parameters: { scenario: r.scenario.name, ...record.flags },
    totals: m.totals,
    k6: m.summary,
    planVsMeasured: m.comparison,
  });
  return { reportPath: path, recordPath: writeRunRecord(r.reportDir, { ...record, report: path }) };
}
