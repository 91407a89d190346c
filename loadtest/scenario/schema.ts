// Scenario files (loadtest/scenarios/*.json): zod validation before k6 starts and trace
// inlining. The k6 script reads the result, typed by scenario/types.ts; the assignment at
// the bottom keeps both descriptions in step.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { APP_NAME_PATTERN } from '../../agent/serve/options.ts';
import { ConfigError, parseConfig } from '../../mock-provider/config.ts';
import type { ScenarioFile, TraceRecord } from './types.ts';

export const SCENARIOS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'scenarios');

const seconds = z.number().min(0, 'must be >= 0 seconds');
const positiveSeconds = z.number().positive('must be > 0 seconds');
const perMinute = z.number().min(0, 'must be >= 0 per minute');
const trafficClass = z.enum(['interactive', 'batch']);

/** A tree the native protocol calls: a sample tree, or a served app (ADK names, `_` included). */
export const treeNameSchema = z
  .string()
  .max(128)
  .regex(APP_NAME_PATTERN, 'must be a tree or app name like review or my_agent: letters, digits, _ or -, not starting with a digit or -');

const requestShape = {
  tree: treeNameSchema.optional(),
  inputTokensPerCall: z.number().int().min(101, 'must be > 100 tokens (the instruction alone is ~100)').max(1_000_000).optional(),
  width: z.number().int().positive().max(1000).optional(),
  trafficClass: trafficClass.optional(),
};

export const traceRecordSchema = z
  .object({
    at: seconds,
    tree: treeNameSchema,
    inputTokensPerCall: z.number().int().min(101).max(1_000_000),
    trafficClass,
    width: z.number().int().positive().max(1000).optional(),
  })
  .strict();

const arrivalSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('burst'),
      at: seconds,
      users: z.number().int().positive().max(10_000),
      repeat: z.object({ every: positiveSeconds, times: z.number().int().positive().max(1000) }).strict().optional(),
      ...requestShape,
    })
    .strict(),
  z
    .object({ kind: z.literal('constant'), start: seconds, perMinute: perMinute, duration: positiveSeconds, ...requestShape })
    .strict(),
  z
    .object({
      kind: z.literal('ramping'),
      start: seconds,
      startPerMinute: perMinute,
      stages: z.array(z.object({ targetPerMinute: perMinute, duration: seconds }).strict()).min(1),
      ...requestShape,
    })
    .strict(),
  z
    .object({
      kind: z.literal('trace'),
      start: seconds.optional(),
      file: z.string().min(1).optional(),
      records: z.array(traceRecordSchema).optional(),
      ...requestShape,
    })
    .strict()
    .refine((t) => (t.file === undefined) !== (t.records === undefined), { message: 'give exactly one of file or records' }),
]);

const fraction = z.number().min(0).max(1);

const adkName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/, 'must be an ADK name: letters, digits, _, . or -, at most 128');
export const adkTargetSchema = z
  .object({
    app: adkName,
    basePath: z
      .string()
      .max(200)
      .regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path like /api (no trailing slash)')
      .optional(),
    userId: z.string().regex(/^[A-Za-z0-9_.@-]{1,128}$/, 'must be 1-128 letters, digits, _, ., @ or -').optional(),
    streaming: z.boolean().optional(),
    message: z.string().min(1).max(100_000).optional(),
    authors: z.array(adkName).min(1).max(1000).optional(),
  })
  .strict();

export const scenarioSchema = z
  .object({
    name: z.string().regex(/^[a-zA-Z0-9_-]+$/, 'must be letters, digits, _ or -'),
    description: z.string().optional(),
    protocol: z.enum(['native', 'adk']).optional(),
    adk: adkTargetSchema.optional(),
    defaults: z.object(requestShape).strict().optional(),
    arrivals: z.array(arrivalSchema).min(1, 'needs at least one arrival'),
    thresholds: z
      .object({
        httpFailedRate: fraction.optional(),
        p95Ms: z.object({ interactive: z.number().positive().optional(), batch: z.number().positive().optional() }).strict().optional(),
        missingBranchesRate: fraction.optional(),
        k6: z.record(z.string(), z.array(z.string())).optional(),
      })
      .strict()
      .optional(),
    mock: z
      .object({
        config: z.record(z.string(), z.unknown()).optional(),
        timeline: z.array(z.object({ at: seconds, set: z.record(z.string(), z.unknown()) }).strict()).optional(),
      })
      .strict()
      .optional(),
    requestTimeout: positiveSeconds.optional(),
    gracefulStop: seconds.optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.protocol === 'adk' && !s.adk) ctx.addIssue({ code: 'custom', path: ['adk'], message: 'is required with protocol adk (at least adk.app)' });
    if (s.adk && s.protocol !== 'adk') ctx.addIssue({ code: 'custom', path: ['adk'], message: 'is only read with protocol adk' });
    if (s.mock) {
      // The mock's own rules (fields, bounds, each timeline step), checked before anything starts, not at the step's time.
      try {
        parseConfig({ ...s.mock.config, timeline: s.mock.timeline ?? [] });
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        const field = error.fields[0] ?? '';
        const parts = (field ? field.split('.') : []).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
        const path = parts[0] === 'timeline' ? ['mock', ...parts] : ['mock', 'config', ...parts];
        ctx.addIssue({ code: 'custom', path, message: error.message.replace('invalid mock-provider config: ', '').replace(`${field}: `, '') });
      }
    }
  });

/** A scenario file that failed validation; the message names the field. */
export class ScenarioError extends Error {
  readonly field: string;
  constructor(source: string, field: string, message: string) {
    super(`${source}: ${field ? `${field}: ` : ''}${message}`);
    this.name = 'ScenarioError';
    this.field = field;
  }
}

function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('');
}

/** Validates parsed JSON; throws a ScenarioError naming the first bad field. */
export function parseScenario(json: unknown, source = 'scenario'): ScenarioFile {
  const result = scenarioSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new ScenarioError(source, fieldPath(issue.path), issue.message);
  }
  return result.data;
}

/** Resolves a scenario argument: a path, or a name in loadtest/scenarios/. */
export function scenarioPath(nameOrPath: string): string {
  if (nameOrPath.endsWith('.json') || nameOrPath.includes('/')) return resolve(nameOrPath);
  return join(SCENARIOS_DIR, `${nameOrPath}.json`);
}

/** Each non-blank line of JSON-lines `text` parsed, with its place (`line N`), in order; a line that is not JSON is a ScenarioError of `source`. */
export function* jsonLines(text: string, source: string): Generator<{ at: string; value: unknown }> {
  for (const [i, line] of text.split('\n').entries()) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new ScenarioError(source, `line ${i + 1}`, 'is not JSON');
    }
    yield { at: `line ${i + 1}`, value };
  }
}

/** Reads a JSON-lines trace file into validated records. */
export function readTrace(path: string): TraceRecord[] {
  return Array.from(jsonLines(readFileSync(path, 'utf8'), path), ({ at, value }) => {
    const r = traceRecordSchema.safeParse(value);
    if (!r.success) throw new ScenarioError(path, `${at}.${fieldPath(r.error.issues[0].path)}`, r.error.issues[0].message);
    return r.data;
  });
}

/** Loads, validates and inlines a scenario file (trace files become records). */
export function loadScenario(nameOrPath: string): ScenarioFile {
  const path = scenarioPath(nameOrPath);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new ScenarioError(path, '', 'cannot read the scenario file');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ScenarioError(path, '', `is not valid JSON (${(e as Error).message})`);
  }
  const scenario = parseScenario(json, path);
  return {
    ...scenario,
    arrivals: scenario.arrivals.map((a) => {
      if (a.kind !== 'trace' || !a.file) return a;
      const tracePath = isAbsolute(a.file) ? a.file : join(dirname(path), a.file);
      return { ...a, file: undefined, records: readTrace(tracePath) };
    }),
  };
}

// Compile-time check that the zod schema and the k6 types describe the same file.
type Parsed = z.output<typeof scenarioSchema>;
export const _schemaMatchesK6Types: (p: Parsed) => ScenarioFile = (p) => p;
