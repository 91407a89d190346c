// `npm run build`: compiles the product folders to dist/ (ESM JavaScript, .d.ts, source
// maps with their sources inlined) and copies the files they read at run time: scenarios,
// the k6 script and the .ts files it imports (k6 runs TypeScript itself), the generated
// dashboards and rules, the report page's script and scripts/tools.sh. Tests, bench and
// docs are not part of the package.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
/** The load-test script k6 runs (k6 reads TypeScript itself, so it ships as source with what it imports). */
const K6_SCRIPT = 'loadtest/k6/run.ts';

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

/** A TypeScript file and every .ts file it imports by relative path, transitively (repo-relative). */
function importGraph(entry: string, seen = new Set<string>()): Set<string> {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  for (const [, specifier] of readFileSync(join(root, entry), 'utf8').matchAll(/from '(\.{1,2}\/[^']+\.ts)'/g)) {
    importGraph(relative(root, join(root, dirname(entry), specifier)), seen);
  }
  return seen;
}

const copy = (from: string) => cpSync(join(root, from), join(dist, from), { recursive: true });
copy('loadtest/scenarios');
for (const file of importGraph(K6_SCRIPT)) copy(file);
copy('dashboards/generated');
copy('loadtest/report/page-script.js'); // the report page's browser script, inlined into each page
copy('scripts/tools.sh');
chmodSync(join(dist, 'cli', 'quotascope.js'), 0o755);
console.log(`[build] wrote ${dist}`);
