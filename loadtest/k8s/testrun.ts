// A k6-operator TestRun (k6.io/v1alpha1) for one scenario: the k6 entry script, the
// modules it imports and the scenario in one ConfigMap (mounted by the operator at /test),
// `parallelism` runners, and every runner remote-writing to the Prometheus the user names.
// The operator gives runner i (1..N) `--execution-segment=(i-1)/N:i/N` and the sequence
// 0,1/N,…,1, so k6 itself divides each scenario's VUs and arrival rates across runners;
// executionSegments() states the same split for the caller. Runners run with
// --no-thresholds: each sees only its segment, so the run's verdict comes afterwards from
// Prometheus (thresholds.ts).
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { stringify } from 'yaml';
import { z } from 'zod';
import { buildThresholds } from '../k6/build-options.ts';
import { K6_SCRIPT, TREND_STATS } from '../drive/runner.ts';
import type { ScenarioFile } from '../scenario/types.ts';
import { K6_ENV } from '../stack/tools.ts';
import { parseThresholds, trendStatsFor } from './thresholds.ts';

/** The k6 image the runners use: the release scripts/tools.sh builds locally. */
export const DEFAULT_K6_IMAGE = 'grafana/k6:2.2.0';
/** Where k6-operator mounts a script ConfigMap in every runner. */
export const SCRIPT_MOUNT = '/test';
/** The scenario's key in the script ConfigMap. */
export const SCENARIO_KEY = 'scenario.json';
/** A ConfigMap holds at most 1 MiB (Kubernetes' object size limit for ConfigMaps). */
const CONFIGMAP_MAX_BYTES = 1024 * 1024;

const dnsLabel = z
  .string()
  .min(1)
  .max(52, 'must be at most 52 characters (the operator appends -initializer, -starter and -<runner>)')
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be lower-case letters, digits and -, starting and ending with a letter or digit');

export const testRunOptionsSchema = z.object({
  /** Name of the TestRun; the ConfigMap is <name>-script. */
  name: dnsLabel,
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a namespace name (lower-case letters, digits and -, at most 63)')
    .optional(),
  /** k6 runners (pods); each runs 1/parallelism of every scenario. */
  parallelism: z.int().min(1).max(100),
  /** Agent service base URL(s) as the runners reach them, comma-separated. */
  target: z.string().min(1).refine((t) => t.split(',').every((u) => /^https?:\/\/[^\s,]+$/.test(u.trim())), 'must be http(s) URLs, comma-separated'),
  /** Remote-write endpoint, e.g. http://prometheus-operated.monitoring:9090/api/v1/write or Mimir's /api/v1/push. */
  remoteWriteUrl: z.url({ protocol: /^https?$/ }),
  /** The `testid` tag on every sample: how the threshold evaluator finds this run. */
  runId: z.string().regex(/^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/, 'must be 1-63 letters, digits, _ . or -, starting and ending with a letter or digit (it is also a label value)'),
  image: z.string().min(1).default(DEFAULT_K6_IMAGE),
  /** Seconds between two remote-write pushes of a runner. */
  pushIntervalSeconds: z.int().min(1).max(300).default(5),
  /** A Secret whose keys become the runners' environment (e.g. K6_PROMETHEUS_RW_USERNAME, _PASSWORD, _BEARER_TOKEN). */
  remoteWriteSecret: dnsLabel.optional(),
});
export type TestRunOptions = z.input<typeof testRunOptionsSchema>;

export class TestRunError extends Error {
  override name = 'TestRunError';
}

/** The execution segment and sequence k6-operator passes to runner i of n (1-based). */
export function executionSegments(parallelism: number): { segment: string; sequence: string }[] {
  const point = (i: number): string => (i === 0 ? '0' : i === parallelism ? '1' : `${i}/${parallelism}`);
  const sequence = Array.from({ length: parallelism + 1 }, (_, i) => point(i)).join(',');
  return Array.from({ length: parallelism }, (_, i) => ({ segment: `${point(i)}:${point(i + 1)}`, sequence }));
}

/** The folder the script's modules are named relative to: the repository (loadtest/k6/run.ts → loadtest.k6.run.ts). */
const MODULES_ROOT = dirname(dirname(dirname(K6_SCRIPT)));
const importSpecifier = /(^\s*(?:import|export)\s(?:[^'";]*?\sfrom\s)?)(['"])(\.{1,2}\/[^'"]+)\2/gm;

/** A module's ConfigMap key: its path in the repository with dots for slashes. */
function moduleKey(path: string): string {
  const rel = relative(MODULES_ROOT, path);
  const key = rel.split(sep).join('.');
  if (rel.startsWith('..') || !/^[-._a-zA-Z0-9]+$/.test(key)) throw new TestRunError(`${path}: a module outside the repository or with a name a ConfigMap key cannot hold`);
  return key;
}

/**
 * The entry script and every module it imports, keyed for one ConfigMap. A ConfigMap has
 * no folders and the operator mounts it flat at /test, so each module becomes one key and
 * each relative import in it is rewritten to that key (`../scenario/request.ts` →
 * `./loadtest.scenario.request.ts`); k6 resolves them there as it would in the source tree.
 */
export function scriptFiles(entry: string = K6_SCRIPT): { entry: string; files: Record<string, string> } {
  const files: Record<string, string> = {};
  const pathOf = new Map<string, string>();
  const visit = (path: string): string => {
    const key = moduleKey(path);
    if (pathOf.has(key)) {
      if (pathOf.get(key) !== path) throw new TestRunError(`${path} and ${pathOf.get(key)} would share the ConfigMap key ${key}`);
      return key;
    }
    pathOf.set(key, path);
    files[key] = ''; // reserved before the imports, so a cycle ends here
    files[key] = readFileSync(path, 'utf8').replace(importSpecifier, (_m, head: string, quote: string, spec: string) => {
      if (!spec.endsWith('.ts')) throw new TestRunError(`${path} imports ${spec}: k6 needs the .ts extension`);
      return `${head}${quote}./${visit(resolve(dirname(path), spec))}${quote}`;
    });
    return key;
  };
  return { entry: visit(entry), files };
}

export interface RenderedTestRun {
  readonly configMap: Record<string, unknown>;
  readonly testRun: Record<string, unknown>;
  /** What each runner gets from the operator, in runner order. */
  readonly segments: { segment: string; sequence: string }[];
  /** Both objects as one multi-document YAML for `kubectl apply -f -`. */
  readonly yaml: string;
}

/** Renders the ConfigMap and the TestRun for a (validated, scaled) scenario. */
export function renderTestRun(scenario: ScenarioFile, options: TestRunOptions): RenderedTestRun {
  const parsed = testRunOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TestRunError(`TestRun: ${issue.path.join('.') || '(options)'}: ${issue.message}`);
  }
  const o = parsed.data;
  const thresholds = parseThresholds(buildThresholds(scenario));
  const trendStats = [...new Set([...TREND_STATS.split(','), ...trendStatsFor(thresholds)])].join(',');
  const script = scriptFiles();
  const data = { ...script.files, [SCENARIO_KEY]: `${JSON.stringify(scenario, null, 2)}\n` };
  const bytes = Object.entries(data).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (bytes > CONFIGMAP_MAX_BYTES) {
    throw new TestRunError(`TestRun: the script and scenario take ${bytes} bytes, more than a ConfigMap's ${CONFIGMAP_MAX_BYTES} (a long inline trace?)`);
  }
  const labels = { 'app.kubernetes.io/part-of': 'quotascope', 'app.kubernetes.io/component': 'loadtest', 'quotascope.dev/testid': o.runId };
  const metadata = (name: string) => ({ name, ...(o.namespace ? { namespace: o.namespace } : {}), labels });
  const configMapName = `${o.name}-script`;

  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata(configMapName), data };
  const env = [
    { name: 'SCENARIO_FILE', value: `${SCRIPT_MOUNT}/${SCENARIO_KEY}` },
    { name: 'TARGET', value: o.target },
    { name: 'K6_PROMETHEUS_RW_SERVER_URL', value: o.remoteWriteUrl },
    { name: 'K6_PROMETHEUS_RW_TREND_STATS', value: trendStats },
    { name: 'K6_PROMETHEUS_RW_PUSH_INTERVAL', value: `${o.pushIntervalSeconds}s` },
    ...Object.entries(K6_ENV).map(([name, value]) => ({ name, value })),
  ];
  const testRun = {
    apiVersion: 'k6.io/v1alpha1',
    kind: 'TestRun',
    metadata: metadata(o.name),
    spec: {
      parallelism: o.parallelism,
      script: { configMap: { name: configMapName, file: script.entry } },
      arguments: ['-o', 'experimental-prometheus-rw', '--tag', `testid=${o.runId}`, '--no-thresholds'].join(' '),
      runner: {
        image: o.image,
        env,
        ...(o.remoteWriteSecret ? { envFrom: [{ secretRef: { name: o.remoteWriteSecret } }] } : {}),
        securityContext: { runAsNonRoot: true },
      },
    },
  };
  const yaml = [configMap, testRun].map((doc) => stringify(doc, { lineWidth: 0 })).join('---\n');
  return { configMap, testRun, segments: executionSegments(o.parallelism), yaml };
}
