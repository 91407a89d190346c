// The bench runner as a process, on a folder of tiny benchmark modules written by the test:
// discovery, --only, ratio tables against each group's baseline, the JSON file, bad rows.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverModules, formatTables, rateRows } from '../../bench/run.ts';
import type { BenchReport } from '../../bench/run.ts';

const runner = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));
const run = promisify(execFile);
let dir: string;

const modules: Record<string, string> = {
  // Two groups: ratios are computed within each group only.
  'alpha.ts': `export default async () => [
    { group: 'copy', name: 'memcpy', baseline: true, opsPerSec: 1000, meanNs: 1e6 },
    { group: 'copy', name: 'slow copy', baseline: false, opsPerSec: 250, meanNs: 4e6 },
    { group: 'parse', name: 'json', baseline: false, opsPerSec: 300 },
    { group: 'parse', name: 'noop', baseline: true, opsPerSec: 100, extra: { note: 'x' } },
  ];`,
  'beta.ts': `export default async () => [
    { group: 'g', name: 'one', baseline: true, opsPerSec: 10 },
    { group: 'g', name: 'two', baseline: true, opsPerSec: 20 },
  ];`,
  // Variants to pick with --variants: by default the invalid one runs.
  'gamma.ts': `export const variants = ['neg', 'pos'];
  export default async (options = {}) => (options.variants ?? ['neg']).map((name) => ({ group: 'g', name, baseline: name === 'neg' || !(options.variants ?? []).includes('neg'), opsPerSec: name === 'neg' ? -1 : 5 }));`,
  // Not benchmark modules: the runner must never import these.
  'types.ts': `throw new Error('types.ts must not be run');`,
  'run.ts': `throw new Error('run.ts must not be run');`,
  'notes.md': 'not a module',
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quotascope-bench-'));
  await writeFile(join(dir, 'package.json'), '{"type":"module"}');
  for (const [name, text] of Object.entries(modules)) await writeFile(join(dir, name), text);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function runRunner(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [runner, '--dir', dir, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('bench runner', () => {
  it('discovers the modules, skipping run.ts, types.ts and non-TypeScript files', async () => {
    expect(await discoverModules(dir)).toEqual(['alpha', 'beta', 'gamma']);
  });

  it('prints ratio tables per group and writes the JSON file', async () => {
    const out = join(dir, 'results', 'one.json');
    const { code, stdout, stderr } = await runRunner(['--only', 'alpha', '--out', out]);
    expect(code).toBe(0);
    expect(stderr).toContain('[bench] alpha: running');
    expect(stdout).toContain('alpha: copy');
    expect(stdout).toMatch(/memcpy\s+1\.0 k\s+1\.00 ms\s+1\.00x \(baseline\)/);
    expect(stdout).toMatch(/slow copy\s+250\s+4\.00 ms\s+0\.25x/);
    expect(stdout).toContain('alpha: parse');
    expect(stdout).toMatch(/json\s+300\s+3\.00x/);
    const report = JSON.parse(await readFile(out, 'utf8')) as BenchReport;
    expect(report.node).toBe(process.version);
    expect(report.modules.map((m) => m.module)).toEqual(['alpha']);
    const ratios = Object.fromEntries(report.modules[0].rows.map((r) => [r.name, r.ratio]));
    expect(ratios).toEqual({ memcpy: 1, 'slow copy': 0.25, json: 3, noop: 1 });
    expect(report.modules[0].rows[3].extra).toEqual({ note: 'x' });
  });

  it('reports modules with bad rows as failed, keeps running the others, and exits 1', async () => {
    const out = join(dir, 'results', 'all.json');
    const { code, stdout } = await runRunner(['--out', out]);
    expect(code).toBe(1);
    expect(stdout).toContain('alpha: copy');
    expect(stdout).toContain("beta: FAILED: group 'g' has more than one baseline row");
    expect(stdout).toMatch(/gamma: FAILED: bad rows: 0\.opsPerSec: /);
    const report = JSON.parse(await readFile(out, 'utf8')) as BenchReport;
    expect(report.modules.map((m) => [m.module, m.error === undefined])).toEqual([
      ['alpha', true],
      ['beta', false],
      ['gamma', false],
    ]);
  });

  it('answers bad flags and unknown modules with one line and exit code 2', async () => {
    const unknown = await runRunner(['--only', 'delta']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe('bench: --only: unknown module delta (known: alpha, beta, gamma)');
    const badFlag = await runRunner(['--fast']);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr.trim()).toMatch(/^bench: --fast: unknown flag/);
  });

  it('passes --variants to the modules that export variants; an unknown variant is one line and exit code 2', async () => {
    const out = join(dir, 'results', 'variants.json');
    const picked = await runRunner(['--only', 'alpha,gamma', '--variants', 'pos', '--out', out]);
    expect(picked.code).toBe(0);
    const report = JSON.parse(await readFile(out, 'utf8')) as BenchReport;
    expect(report.modules.map((m) => [m.module, m.rows.map((r) => r.name)])).toEqual([
      ['alpha', ['memcpy', 'slow copy', 'json', 'noop']],
      ['gamma', ['pos']],
    ]);
    const unknown = await runRunner(['--only', 'gamma', '--variants', 'pos,zero']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe('bench: --variants: unknown variant zero (known: neg, pos)');
    const none = await runRunner(['--only', 'alpha', '--variants', 'pos']);
    expect(none.code).toBe(2);
    expect(none.stderr.trim()).toBe('bench: --variants: unknown variant pos (known: none in the modules chosen)');
  });

  it('rates rows against their own group and rejects a group without a baseline', () => {
    const rated = rateRows([
      { group: 'a', name: 'base', baseline: true, opsPerSec: 4 },
      { group: 'a', name: 'x', baseline: false, opsPerSec: 2 },
    ]);
    expect(rated.map((r) => r.ratio)).toEqual([1, 0.5]);
    expect(() => rateRows([{ group: 'b', name: 'x', baseline: false, opsPerSec: 1 }])).toThrow(/no baseline/);
    expect(formatTables([{ module: 'm', durationMs: 1, rows: rated }])).toContain('0.50x');
  });
});
