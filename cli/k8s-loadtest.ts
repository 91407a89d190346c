// `loadtest <scenario> --k8s …`: renders a k6-operator TestRun for the scenario (stdout or
// --out), or with --evaluate decides the finished run's pass/fail from Prometheus with the
// scenario's thresholds. Returns the exit code: 0 rendered / passed, 99 thresholds failed
// (k6's own code), 2 bad usage, 1 Prometheus could not be asked.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { decimalFlag } from './decimal-number.ts';
import { replaceFile } from '../shared/replace-files.ts';
import { buildThresholds } from '../loadtest/k6/build-options.ts';
import { THRESHOLDS_FAILED } from '../loadtest/drive/runner.ts';
import { scaleScenario } from '../loadtest/scenario/scale.ts';
import { loadScenario, ScenarioError } from '../loadtest/scenario/schema.ts';
import { renderTestRun, TestRunError } from '../loadtest/k8s/testrun.ts';
import { evaluateThresholds, findRunWindow, formatVerdicts, ThresholdError } from '../loadtest/k8s/thresholds.ts';

export const K8S_USAGE = `usage: quotascope loadtest <scenario> --k8s [flags]          render a k6-operator TestRun (kubectl apply -f -)
  --parallelism N        k6 runners; k6 splits every arrival across them by execution segment (default 1, at most 100)
  --target URL[,URL]     agent service URL as the runners reach it, e.g. http://quotascope-agent.default:8080 (required)
  --remote-write URL     where runners remote-write, e.g. http://prometheus-operated.monitoring:9090/api/v1/write (required)
  --remote-write-secret NAME  Secret whose keys become runner env (K6_PROMETHEUS_RW_USERNAME/_PASSWORD/_BEARER_TOKEN)
  --run-id ID            the testid tag of every sample (default <scenario>-<UTC time>)
  --name NAME            TestRun name (default: the run id); the ConfigMap is NAME-script
  --namespace NS         namespace of both objects (default: kubectl's)
  --image IMAGE          k6 runner image (default grafana/k6:2.2.0)
  --push-interval S      seconds between remote-write pushes (default 5)
  --scale F, --load F    stretch times / multiply users and rates, as for a local run
  --out FILE             write the YAML to FILE instead of stdout
       quotascope loadtest <scenario> --k8s --evaluate [flags]    the run's pass/fail from Prometheus
  --prometheus URL       Prometheus (or a compatible query API) holding the runners' metrics (required)
  --run-id ID            the run's testid (required)
  --start T, --end T     the run window (ISO time or epoch ms; default: found from the run's own k6_* series)
  --lookback H           hours before now to look for the run when no window is given (default 24)`;

const renderFlags = z.object({
  parallelism: decimalFlag(z.number().int().min(1).max(100)).default(1),
  target: z.string().min(1, 'required'),
  'remote-write': z.url({ protocol: /^https?$/ }),
  'remote-write-secret': z.string().optional(),
  'run-id': z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
  image: z.string().optional(),
  'push-interval': decimalFlag(z.number().int().min(1).max(300)).default(5),
  scale: decimalFlag(z.number().positive().max(1000)).default(1),
  load: decimalFlag(z.number().positive().max(1000)).default(1),
  out: z.string().optional(),
});

const time = z.union([decimalFlag(z.number().int().nonnegative()), z.iso.datetime({ offset: true }).transform((s) => Date.parse(s))]);
const evaluateFlags = z.object({
  prometheus: z.url({ protocol: /^https?$/ }),
  'run-id': z.string().min(1, 'required'),
  start: time.optional(),
  end: time.optional(),
  lookback: decimalFlag(z.number().positive().max(24 * 90)).default(24),
});

const FLAG_NAMES = [...new Set([...Object.keys(renderFlags.shape), ...Object.keys(evaluateFlags.shape)])];

class UsageError extends Error {}

function parseFlags<T extends z.ZodObject>(schema: T, values: Record<string, unknown>): z.output<T> {
  const known = new Set(Object.keys(schema.shape));
  for (const key of Object.keys(values)) {
    if (!known.has(key) && values[key] !== undefined) throw new UsageError(`--${key}: not a flag of this mode`);
  }
  const result = schema.safeParse(values);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new UsageError(`--${String(issue.path[0])}: ${issue.message}`);
  }
  return result.data;
}

/** A default run id: the scenario name and the UTC minute, as a DNS label. */
function defaultRunId(scenarioName: string, now = new Date()): string {
  const stamp = now.toISOString().slice(0, 16).replace(/[-:]/g, '').toLowerCase();
  return `${scenarioName.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-${stamp}`.slice(0, 52).replace(/-+$/, '');
}

async function evaluate(scenarioArg: string, values: Record<string, unknown>, out: (line: string) => void): Promise<number> {
  const flags = parseFlags(evaluateFlags, values);
  const thresholds = buildThresholds(loadScenario(scenarioArg));
  if (Object.keys(thresholds).length === 0) throw new UsageError(`${scenarioArg}: the scenario has no thresholds to evaluate`);
  const selector = { testid: flags['run-id'] };
  let window = flags.start !== undefined && flags.end !== undefined ? { start: flags.start, end: flags.end } : undefined;
  if (!window) {
    window = await findRunWindow(flags.prometheus, selector, flags.lookback * 3_600_000);
    if (!window) throw new ThresholdError(`no k6_* series with testid="${flags['run-id']}" in the last ${flags.lookback} h at ${flags.prometheus}`);
    window = { start: flags.start ?? window.start, end: flags.end ?? window.end };
  }
  const verdict = await evaluateThresholds(thresholds, { prometheusUrl: flags.prometheus, selector, ...window });
  out(formatVerdicts(verdict));
  return verdict.ok ? 0 : THRESHOLDS_FAILED;
}

function render(scenarioArg: string, values: Record<string, unknown>, out: (line: string) => void): number {
  const flags = parseFlags(renderFlags, values);
  const scenario = scaleScenario(loadScenario(scenarioArg), { time: flags.scale, load: flags.load });
  const runId = flags['run-id'] ?? defaultRunId(scenario.name);
  const rendered = renderTestRun(scenario, {
    name: flags.name ?? runId.toLowerCase(),
    namespace: flags.namespace,
    parallelism: flags.parallelism,
    target: flags.target,
    remoteWriteUrl: flags['remote-write'],
    remoteWriteSecret: flags['remote-write-secret'],
    runId,
    image: flags.image,
    pushIntervalSeconds: flags['push-interval'],
  });
  if (flags.out) replaceFile(flags.out, rendered.yaml);
  else out(rendered.yaml.trimEnd());
  const notes = [`# TestRun ${runId}: ${flags.parallelism} runner(s), segments ${rendered.segments.map((s) => s.segment).join(' ')}`];
  if (scenario.mock?.config || scenario.mock?.timeline) {
    notes.push(`# scenario ${scenario.name} changes the mock provider: apply its "mock" settings with PUT /admin/config before the run`);
  }
  notes.push(`# afterwards: quotascope loadtest ${scenarioArg} --k8s --evaluate --prometheus URL --run-id ${runId}`);
  for (const line of notes) console.error(line);
  return 0;
}

/**
 * The `--k8s` mode of `quotascope loadtest`: argv is everything after `loadtest`
 * (the scenario and the flags, `--k8s` included or not). Prints one line on a bad input.
 */
export async function k8sLoadtestCommand(argv: readonly string[], out: (line: string) => void = console.log): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv.filter((a) => a !== '--k8s'),
      allowPositionals: true,
      strict: true,
      options: {
        ...Object.fromEntries(FLAG_NAMES.map((k) => [k, { type: 'string' as const }])),
        evaluate: { type: 'boolean' as const },
        help: { type: 'boolean' as const },
      },
    });
    if (values.help) {
      out(K8S_USAGE);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError(`expected one scenario (a name in loadtest/scenarios or a path), got ${positionals.length}`);
    const { evaluate: evaluating, help: _help, ...flags } = values;
    return evaluating ? await evaluate(positionals[0], flags, out) : render(positionals[0], flags, out);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const badInput =
      error instanceof UsageError ||
      error instanceof ScenarioError ||
      error instanceof TestRunError ||
      error instanceof ThresholdError ||
      String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS');
    console.error(`loadtest --k8s: ${badInput ? message : `cannot query Prometheus: ${message}`}`);
    return badInput ? 2 : 1;
  }
}
