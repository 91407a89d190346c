// A k6-operator TestRun (k6.io/v1alpha1) for one scenario: the k6 entry script, the
// modules it imports and the scenario in one ConfigMap (mounted by the operator at /test),
// `parallelism` runners, and every runner remote-writing to the Prometheus the user names.
// The operator gives runner i (1..N) `--execution-segment=(i-1)/N:i/N` and the sequence
// 0,1/N,…,1, so k6 itself divides each scenario's VUs and arrival rates across runners;
// executionSegments() states the same split for the caller. Runners run with
// --no-thresholds: each sees only its segment, so the run's verdict comes afterwards from
// Prometheus (thresholds.ts).
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { z } from 'zod';
import { buildThresholds } from '../k6/build-options.ts';
import type { ScenarioFile } from '../k6/scenario-types.ts';
import { K6_SCRIPT, TREND_STATS } from '../k6-runner.ts';
import { K6_ENV } from '../tools.ts';
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
  namespace: dnsLabel.optional(),
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

/**
 * The entry script and the modules it imports, by file name. k6 resolves imports relative
 * to the script and a ConfigMap has no folders, so every import must be a sibling file.
 */
export function scriptFiles(entry: string = K6_SCRIPT): Record<string, string> {
  const dir = dirname(entry);
  const files: Record<string, string> = {};
  const visit = (file: string) => {
    if (file in files) return;
    const text = readFileSync(join(dir, file), 'utf8');
    files[file] = text;
    for (const [, spec] of text.matchAll(/^\s*import\s[^'"]*['"]([^'"]+)['"]/gm)) {
      if (!spec.startsWith('.')) continue; // k6/… modules are built into k6
      if (!/^\.\/[\w.-]+\.ts$/.test(spec)) throw new TestRunError(`${file} imports ${spec}: a ConfigMap script can only import sibling .ts files`);
      visit(spec.slice(2));
    }
  };
  visit(basename(entry));
  return files;
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
  const data = { ...scriptFiles(), [SCENARIO_KEY]: `${JSON.stringify(scenario, null, 2)}\n` };
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
      script: { configMap: { name: configMapName, file: basename(K6_SCRIPT) } },
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
