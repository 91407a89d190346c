// `npm run bench`: runs every benchmark module bench/<part>.ts (contract in types.ts), prints a
// table per group with each row's throughput as a ratio of the group's baseline measured in
// the same run, and writes every figure to bench/results/latest.json (--help for the flags).
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../cli/errors.ts';
import { FlagSet, type FlagSpec } from '../cli/flags.ts';
import { standardHelp, runCommand } from '../cli/run-command.ts';
import type { BenchModuleOptions, BenchRow } from './types.ts';

const here = dirname(fileURLToPath(import.meta.url));
/** Files in the module folder that are not benchmark modules. */
const notModules = new Set(['run.ts', 'types.ts']);

const rowSchema = z.object({
  group: z.string().min(1),
  name: z.string().min(1),
  baseline: z.boolean(),
  opsPerSec: z.number().positive().finite(),
  meanNs: z.number().nonnegative().finite().optional(),
  extra: z.record(z.string(), z.union([z.number(), z.string()])).optional(),
});
export const rowsSchema = z.array(rowSchema).min(1, 'returned no rows');

export interface RatedRow extends BenchRow {
  /** opsPerSec divided by the group's baseline opsPerSec (1 for the baseline itself). */
  readonly ratio: number;
}

export interface ModuleResult {
  readonly module: string;
  readonly durationMs: number;
  readonly rows: readonly RatedRow[];
  readonly error?: string;
}

export interface BenchReport {
  readonly startedAt: string;
  readonly node: string;
  readonly platform: string;
  readonly cpu: string;
  readonly cores: number;
  readonly modules: readonly ModuleResult[];
}

interface RunnerArgs {
  readonly only?: readonly string[];
  readonly variants?: readonly string[];
  readonly dir: string;
  readonly out: string;
}

const FLAGS = {
  only: {
    flag: 'only',
    value: 'a,b',
    help: 'run only these modules (file names without .ts)',
    parse: (v: string) => v.split(',').map((s) => s.trim().replace(/\.ts$/, '')).filter(Boolean),
    defaultText: 'every module',
  },
  variants: {
    flag: 'variants',
    value: 'a,b',
    help: 'run only these variants of the modules that have them (a module exports `variants`; e.g. quota: "quotascope central,adaptive timeline")',
    parse: (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean),
    defaultText: 'every variant',
  },
  dir: { flag: 'dir', value: 'path', help: 'where the modules are', schema: z.string().min(1).default(here), parse: (v: string) => resolve(v) },
  out: { flag: 'out', value: 'path', help: 'the JSON file', schema: z.string().min(1).default(join(here, 'results', 'latest.json')), parse: (v: string) => resolve(v) },
} as const satisfies Record<string, FlagSpec>;

/** Benchmark module names (file names without .ts) in a folder, sorted. */
export async function discoverModules(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') && !notModules.has(e.name))
    .map((e) => basename(e.name, '.ts'))
    .sort();
}

/** Adds each row's ratio to its group's baseline; each group needs exactly one baseline. */
export function rateRows(rows: readonly BenchRow[]): RatedRow[] {
  const baselines = new Map<string, BenchRow>();
  for (const row of rows) {
    if (!row.baseline) continue;
    if (baselines.has(row.group)) throw new Error(`group '${row.group}' has more than one baseline row`);
    baselines.set(row.group, row);
  }
  return rows.map((row) => {
    const baseline = baselines.get(row.group);
    if (!baseline) throw new Error(`group '${row.group}' has no baseline row`);
    return { ...row, ratio: row.opsPerSec / baseline.opsPerSec };
  });
}

interface LoadedModule {
  readonly default?: unknown;
  readonly variants?: unknown;
}

const loadModule = (dir: string, name: string): Promise<LoadedModule> => import(pathToFileURL(join(dir, `${name}.ts`)).href);

/** The variants a module names (its `variants` export), if it has any. */
async function moduleVariants(dir: string, name: string): Promise<readonly string[]> {
  const variants = await loadModule(dir, name).then(
    (loaded) => loaded.variants,
    () => undefined, // a module that fails to load fails when it runs, with its reason
  );
  return Array.isArray(variants) ? variants.filter((v): v is string => typeof v === 'string') : [];
}

/** Which of `--variants` each selected module runs; one line (exit 2) for a name no selected module has. */
async function variantsPerModule(dir: string, names: readonly string[], wanted: readonly string[]): Promise<Map<string, string[]>> {
  const perModule = new Map<string, string[]>();
  const known: string[] = [];
  for (const name of names) {
    const variants = await moduleVariants(dir, name);
    known.push(...variants);
    if (variants.length > 0) perModule.set(name, wanted.filter((v) => variants.includes(v)));
  }
  const unknown = wanted.filter((v) => !known.includes(v));
  if (unknown.length > 0) throw new UsageError(`--variants: unknown variant ${unknown.join(', ')} (known: ${known.join(', ') || 'none in the modules chosen'})`);
  return perModule;
}

async function runModule(dir: string, name: string, options: BenchModuleOptions = {}): Promise<ModuleResult> {
  const started = performance.now();
  try {
    const run = (await loadModule(dir, name)).default;
    if (typeof run !== 'function') throw new Error('its default export is not a function (see bench/types.ts)');
    const parsed = rowsSchema.safeParse(await run(options));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`bad rows: ${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`);
    }
    return { module: name, durationMs: performance.now() - started, rows: rateRows(parsed.data) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { module: name, durationMs: performance.now() - started, rows: [], error: message };
  }
}

function formatOps(ops: number): string {
  if (ops >= 1e6) return `${(ops / 1e6).toFixed(2)} M`;
  if (ops >= 1e3) return `${(ops / 1e3).toFixed(1)} k`;
  return ops >= 100 ? ops.toFixed(0) : ops.toPrecision(3);
}

function formatNs(ns: number | undefined): string {
  if (ns === undefined) return '';
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(0)} ns`;
}

/** Two decimals, or two significant digits for ratios too small for that (0.00018x). */
function formatRatio(ratio: number): string {
  return `${ratio >= 0.01 ? ratio.toFixed(2) : ratio.toPrecision(2)}x`;
}

/** One table per group: name, ops/s, mean, ratio against the group's baseline. */
export function formatTables(results: readonly ModuleResult[]): string {
  const out: string[] = [];
  for (const result of results) {
    if (result.error) {
      out.push(`${result.module}: FAILED: ${result.error}`);
      continue;
    }
    const groups = [...new Set(result.rows.map((r) => r.group))];
    for (const group of groups) {
      const rows = result.rows.filter((r) => r.group === group);
      const cells = [
        ['', 'ops/s', 'mean', 'vs baseline'],
        ...rows.map((r) => [
          r.name,
          formatOps(r.opsPerSec),
          formatNs(r.meanNs),
          r.baseline ? '1.00x (baseline)' : formatRatio(r.ratio),
        ]),
      ];
      const widths = cells[0].map((_, col) => Math.max(...cells.map((line) => line[col].length)));
      const lines = cells.map((line) =>
        line.map((cell, col) => (col === 0 ? cell.padEnd(widths[col]) : cell.padStart(widths[col]))).join('  '),
      );
      out.push(`${result.module}: ${group}\n${lines.map((l) => `  ${l.trimEnd()}`).join('\n')}`);
    }
  }
  return `${out.join('\n\n')}\n`;
}

async function runBench(args: RunnerArgs): Promise<number> {
  const available = await discoverModules(args.dir);
  const unknown = (args.only ?? []).filter((name) => !available.includes(name));
  if (unknown.length > 0) throw new UsageError(`--only: unknown module ${unknown.join(', ')} (known: ${available.join(', ') || 'none'})`);
  const names = args.only ? available.filter((name) => args.only?.includes(name)) : available;
  const variants = args.variants ? await variantsPerModule(args.dir, names, args.variants) : undefined;
  const startedAt = new Date().toISOString();
  const results: ModuleResult[] = [];
  for (const name of names) {
    process.stderr.write(`[bench] ${name}: running…\n`);
    const result = await runModule(args.dir, name, { variants: variants?.get(name) });
    const status = result.error ? `FAILED (${result.error})` : `${result.rows.length} rows`;
    process.stderr.write(`[bench] ${name}: ${status} in ${(result.durationMs / 1000).toFixed(1)} s\n`);
    results.push(result);
  }
  const report: BenchReport = {
    startedAt,
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    modules: results,
  };
  process.stdout.write(formatTables(results));
  await mkdir(dirname(args.out), { recursive: true });
  await writeFile(args.out, `${JSON.stringify(report, null, 2)}\n`);
  process.stderr.write(`[bench] wrote ${args.out}\n`);
  return results.some((r) => r.error) ? 1 : 0;
}

export function benchCommand(): Command {
  const command = new Command('bench').description('run the benchmark modules; print a table per group and write every figure as JSON');
  const flags = new FlagSet(command, FLAGS, { formerEnvPrefix: 'BENCH_' });
  command.action(async () => {
    process.exitCode = await runBench(flags.values() as unknown as RunnerArgs);
  });
  return command;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await runCommand(standardHelp(benchCommand()), process.argv.slice(2));
}
