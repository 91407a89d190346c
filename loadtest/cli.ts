// `npm run loadtest -- <scenario> [--target URL] [--prometheus URL] [--mock-url URL] [--scale F] [--load F]`
// runs one scenario with k6 against a running stack; `npm run loadtest -- convert-trace
// access.log [--out trace.jsonl]` turns the agent service's access log into a trace.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { runK6, THRESHOLDS_FAILED } from './k6-runner.ts';
import { loadScenario, ScenarioError, scaleScenario } from './scenario.ts';
import { ToolMissingError } from './tools.ts';
import { convertAccessLog, toJsonLines } from './trace-convert.ts';

const USAGE = `usage: npm run loadtest -- <scenario> [flags]
  <scenario>          a name in loadtest/scenarios (burst, steady-40rpm, ramp, quota-incident, lanes, trace) or a path
  --target URL        agent service base URL; several comma-separated replicas are spread over (default http://127.0.0.1:8080)
  --prometheus URL    remote-write k6's metrics to this Prometheus (needs --web.enable-remote-write-receiver)
  --mock-url URL      mock provider base URL, for scenarios that change its quota (default http://127.0.0.1:8090)
  --scale F           multiply every time in the scenario by F (0.1 = ten times faster; rates scale by 1/F)
  --load F            multiply users and rates by F
  --report-dir DIR    reports go to DIR/<run-id> (default reports)
       npm run loadtest -- convert-trace <access.jsonl> [--out trace.jsonl]`;

const flagsSchema = z.object({
  target: z.string().default('http://127.0.0.1:8080'),
  prometheus: z.url({ protocol: /^https?$/ }).optional(),
  'mock-url': z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8090'),
  scale: z.coerce.number().positive().default(1),
  load: z.coerce.number().positive().default(1),
  'report-dir': z.string().default('reports'),
  out: z.string().optional(),
});

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...Object.fromEntries(Object.keys(flagsSchema.shape).map((k) => [k, { type: 'string' as const }])),
      help: { type: 'boolean' as const },
    },
  });
  if (values.help || positionals.length === 0) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const parsed = flagsSchema.safeParse(values);
  if (!parsed.success) throw new Error(`--${String(parsed.error.issues[0].path[0])}: ${parsed.error.issues[0].message}`);
  const flags = parsed.data;

  if (positionals[0] === 'convert-trace') {
    if (!positionals[1]) throw new Error('convert-trace needs the access log file');
    const jsonl = toJsonLines(convertAccessLog(readFileSync(positionals[1], 'utf8'), positionals[1]));
    if (flags.out) writeFileSync(flags.out, jsonl);
    else process.stdout.write(jsonl);
    return 0;
  }

  const scenario = scaleScenario(loadScenario(positionals[0]), { time: flags.scale, load: flags.load });
  const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${scenario.name}`;
  const reportDir = resolve(flags['report-dir'], runId);
  console.log(`[loadtest] ${scenario.name} against ${flags.target}${flags.prometheus ? `, remote write to ${flags.prometheus}` : ''}; report in ${reportDir}`);
  const aborter = new AbortController();
  process.once('SIGINT', () => aborter.abort());
  process.once('SIGTERM', () => aborter.abort());
  const result = await runK6({
    scenario,
    target: flags.target,
    reportDir,
    runId,
    prometheusUrl: flags.prometheus,
    mockUrl: flags['mock-url'],
    onLine: (l) => console.log(`[k6] ${l}`),
    signal: aborter.signal,
  });
  if (result.exitCode === THRESHOLDS_FAILED) console.log('[loadtest] thresholds failed (k6 exit 99)');
  return result.exitCode;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (e) {
  const known = e instanceof ScenarioError || e instanceof ToolMissingError;
  console.error(`loadtest: ${(e as Error).message}`);
  if (!known) console.error(USAGE);
  process.exitCode = 2;
}
