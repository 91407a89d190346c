// The real helm (built by scripts/tools.sh into the quotascope tool folder) on the chart in
// deploy/helm/quotascope: lint and template, the rendered manifests parsed.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { quotascopeBinDir } from '../../loadtest/stack/tools.ts';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const CHART = join(REPO, 'deploy', 'helm', 'quotascope');
export const CENTRAL_5 = join(CHART, 'ci', 'central-5.yaml');

const run = promisify(execFile);

export function helmBinary(): string {
  const path = join(quotascopeBinDir(), 'helm');
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`helm is not installed at ${path}; run: npm run tools`);
  }
  return path;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function helm(args: string[]): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(helmBinary(), args, { cwd: REPO, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** `helm template` with the given values files and --set pairs; throws with helm's message on failure. */
export async function renderChart(valuesFiles: string[] = [], sets: string[] = []): Promise<K8sObject[]> {
  const args = ['template', 'qs', CHART, '--namespace', 'quotascope', ...valuesFiles.flatMap((f) => ['-f', f]), ...sets.flatMap((s) => ['--set', s])];
  const result = await helm(args);
  if (result.code !== 0) throw new Error(`helm template failed: ${result.stderr.trim()}`);
  return parseAllDocuments(result.stdout)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

export function kindCounts(objects: readonly K8sObject[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of objects) counts[o.kind] = (counts[o.kind] ?? 0) + 1;
  return counts;
}

export function byName(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}
