// `npm run dashboards`: writes dashboards/generated/ from the specs.
// `--check`: regenerates into a temporary folder and exits 1 naming every file that differs
// from the committed one (npm test runs this so the generated files never go stale).
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedFiles } from './files.ts';

export const generatedDir = join(dirname(fileURLToPath(import.meta.url)), 'generated');

/** Writes every generated file under `dir` (which is emptied first). */
export function writeGenerated(dir: string): string[] {
  rmSync(dir, { recursive: true, force: true });
  const written: string[] = [];
  for (const [path, content] of generatedFiles()) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    written.push(path);
  }
  return written;
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

/** Paths (relative to the generated folder) that are missing, stale or extra in `dir`. */
export function differences(dir: string): string[] {
  const scratch = mkdtempSync(join(tmpdir(), 'quotascope-dashboards-'));
  try {
    writeGenerated(scratch);
    const expected = new Set(listFiles(scratch).map((f) => relative(scratch, f)));
    const actual = new Set(listFiles(dir).map((f) => relative(dir, f)));
    const differing: string[] = [];
    for (const path of [...new Set([...expected, ...actual])].sort()) {
      if (!expected.has(path)) differing.push(`${path} (not generated any more)`);
      else if (!actual.has(path)) differing.push(`${path} (missing)`);
      else if (!readFileSync(join(scratch, path)).equals(readFileSync(join(dir, path)))) differing.push(`${path} (differs)`);
    }
    return differing;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function main(argv: readonly string[]): number {
  const unknown = argv.filter((arg) => arg !== '--check');
  if (unknown.length > 0) {
    console.error(`unknown argument(s): ${unknown.join(' ')}\nusage: node dashboards/generate.ts [--check]`);
    return 2;
  }
  if (argv.includes('--check')) {
    const differing = differences(generatedDir);
    if (differing.length === 0) {
      console.log('dashboards/generated is up to date');
      return 0;
    }
    console.error(`dashboards/generated is out of date; run \`npm run dashboards\`:\n  ${differing.join('\n  ')}`);
    return 1;
  }
  const written = writeGenerated(generatedDir);
  console.log(`wrote ${written.length} files to dashboards/generated/`);
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
