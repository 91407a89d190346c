// `quotascope dashboards` (`npm run dashboards`): writes the dashboards, alert rules and their
// Grafana, Prometheus and Kubernetes shapes.
//   (no flags)                   quotascope's own stack: dashboards/generated/, and the rules and
//                                dashboard JSON the Helm chart embeds (deploy/helm/quotascope/files/)
//   --config FILE --out DIR      a user's stack, from a YAML or JSON config (dashboards/config.ts)
//   --check                      regenerates in memory and exits 1 naming every file that differs
//                                (npm test runs it so the committed files never go stale)
// Every file is generated in memory first and written beside its target, renamed into place
// only once all are written; stale files go last. A failure leaves the folder as it was.
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { replaceFiles } from '../shared/replace-files.ts';
import { type DashboardsConfig, DashboardsConfigError, defaultConfig, parseDashboardsConfig } from './config.ts';
import { generatedFiles, helmFilePaths } from './files.ts';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
export const generatedDir = join(repoRoot, 'dashboards', 'generated');
/** The Helm chart's files/ folder; only rules.yml and dashboards/ in it are generated. */
export const helmFilesDir = join(repoRoot, 'deploy', 'helm', 'quotascope', 'files');

/** Reads and validates a YAML or JSON config file; errors name the file and the field. */
export function loadConfigFile(path: string): DashboardsConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new DashboardsConfigError(`${path}: cannot read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (error) {
    throw new DashboardsConfigError(`${path}: not YAML or JSON: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    return parseDashboardsConfig(value);
  } catch (error) {
    throw new DashboardsConfigError(`${path}: ${(error as Error).message}`);
  }
}

/** Writes `files` under `dir`; then, with `stale`, removes the files `stale` selects that were not written. */
function writeAll(dir: string, files: ReadonlyMap<string, string>, stale?: (path: string) => boolean): string[] {
  const written = replaceFiles(dir, files);
  if (stale) {
    for (const path of listFiles(dir).map((f) => relative(dir, f))) if (stale(path) && !files.has(path)) rmSync(join(dir, path), { force: true });
  }
  return written;
}

/** Writes every generated file for `config` under `dir`; `clean` removes every other file there (only for folders the generator owns). */
export function writeGenerated(dir: string, config: DashboardsConfig = defaultConfig, clean = true): string[] {
  return writeAll(dir, generatedFiles(config), clean ? () => true : undefined);
}

/** The files the Helm chart embeds, by their path in the chart's files/ folder. */
function helmFiles(files: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...helmFilePaths(files)].map(([helmPath, path]) => [helmPath, files.get(path)!]));
}

/** Writes the chart's generated files (rules.yml, dashboards/*.json), leaving the rest of files/ alone. */
export function writeHelmFiles(dir: string, config: DashboardsConfig = defaultConfig): string[] {
  return writeAll(dir, helmFiles(generatedFiles(config)), (path) => path === 'rules.yml' || path.startsWith('dashboards/'));
}

function listFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

function compare(expected: ReadonlyMap<string, string>, dir: string, actualPaths: readonly string[]): string[] {
  const actual = new Set(actualPaths);
  const differing: string[] = [];
  for (const path of [...new Set([...expected.keys(), ...actual])].sort()) {
    const content = expected.get(path);
    if (content === undefined) differing.push(`${path} (not generated any more)`);
    else if (!actual.has(path)) differing.push(`${path} (missing)`);
    else if (!Buffer.from(content).equals(readFileSync(join(dir, path)))) differing.push(`${path} (differs)`);
  }
  return differing;
}

/** Paths (relative to `dir`) that are missing, stale or extra there for `config`. */
export function differences(dir: string, config: DashboardsConfig = defaultConfig): string[] {
  return compare(
    generatedFiles(config),
    dir,
    listFiles(dir).map((f) => relative(dir, f)),
  );
}

/** The same for the Helm chart's generated files (other files in files/ are not the generator's). */
export function helmDifferences(dir: string, config: DashboardsConfig = defaultConfig): string[] {
  const actual = listFiles(dir)
    .map((f) => relative(dir, f))
    .filter((p) => p === 'rules.yml' || p.startsWith('dashboards/'));
  return compare(helmFiles(generatedFiles(config)), dir, actual);
}

/** What `quotascope dashboards` was asked for (its flags are in cli/dashboards.ts). */
export interface DashboardsArgs {
  readonly config?: string;
  readonly out?: string;
  readonly check: boolean;
}

/** Runs the command; returns the exit code. */
export function runDashboards(args: DashboardsArgs): number {
  const config = args.config === undefined ? defaultConfig : loadConfigFile(args.config);
  const targets =
    args.out === undefined
      ? [
          { label: 'dashboards/generated', differing: () => differences(generatedDir, config), write: () => writeGenerated(generatedDir, config) },
          { label: 'deploy/helm/quotascope/files', differing: () => helmDifferences(helmFilesDir, config), write: () => writeHelmFiles(helmFilesDir, config) },
        ]
      : [{ label: args.out, differing: () => differences(resolve(args.out!), config), write: () => writeGenerated(resolve(args.out!), config, false) }];
  if (args.check) {
    const stale = targets.flatMap((t) => t.differing().map((path) => `${t.label}/${path}`));
    if (stale.length === 0) {
      console.log(`${targets.map((t) => t.label).join(' and ')} ${targets.length > 1 ? 'are' : 'is'} up to date`);
      return 0;
    }
    // The command that writes them: quotascope's own stack, or the user's --config/--out.
    const rerun = args.out === undefined ? 'npm run dashboards' : `quotascope dashboards${args.config === undefined ? '' : ` --config ${args.config}`} --out ${args.out}`;
    console.error(`generated files are out of date; run \`${rerun}\`:\n  ${stale.join('\n  ')}`);
    return 1;
  }
  for (const t of targets) console.log(`wrote ${t.write().length} files to ${t.label}/`);
  return 0;
}
