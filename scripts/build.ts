// `npm run build`: compiles the product folders to dist/ (ESM JavaScript, .d.ts, source
// maps with their sources inlined) and copies the files they read at run time: scenarios,
// the k6 script and the .ts files it imports (k6 runs TypeScript itself; under dist/k6/), the generated
// dashboards and rules, the report page's script and scripts/tools.sh. Tests, bench and
// docs are not part of the package.
//
// Two packages come out of one build:
// - `quotascope` (this repository's package.json, files under dist/): the CLI, the services,
//   the report, the dashboards generator, and the library entries too.
// - `quotascope-limiter` (staged in dist/packages/quotascope-limiter, packed with
//   `npm pack ./dist/packages/quotascope-limiter`): the compiled instrumentation/ alone, what
//   a production agent imports, with its own few dependencies; the redis client is an
//   optional peer that only its `./redis` entry loads.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
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

const copy = (from: string, to = from) => cpSync(join(root, from), join(dist, to), { recursive: true });
copy('loadtest/scenarios');
// The k6 sources go under dist/k6/, apart from the compiled files: a .ts source beside its .d.ts
// is what a consumer's tsc resolves an import to (it tries .ts first), and it would type-check
// the source instead of the declaration (loadtest/drive/runner.ts finds the script there).
for (const file of importGraph(K6_SCRIPT)) copy(file, join('k6', file));
copy('dashboards/generated');
copy('loadtest/report/page-script.js'); // the report page's browser script, inlined into each page
copy('scripts/tools.sh');
chmodSync(join(dist, 'cli', 'quotascope.js'), 0o755);
console.log(`[build] wrote ${dist}`);

// ---- quotascope-limiter: the library package ----

interface Manifest {
  version: string;
  exports: Record<string, string | { types: string; default: string }>;
  license: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;

const LIMITER_PACKAGE = 'quotascope-limiter';
/** The library's runtime dependencies (their ranges are the root package's). */
const LIMITER_DEPENDENCIES = ['@opentelemetry/api', 'prom-client', 'zod'] as const;
/** Loaded only by the `./redis` entry: an optional peer, installed by those who share a budget through Redis. */
const LIMITER_OPTIONAL_PEERS = ['redis'] as const;
/** The peers its files import (the root package's ranges). */
const LIMITER_PEERS = ['@google/adk'] as const;
/** The root package's entries into dist/instrumentation/ ('.', './redis', './testing') are the library's. */
const LIMITER_ENTRIES = Object.entries(manifest.exports).flatMap(([path, target]) =>
  typeof target === 'object' && target.default.startsWith('./dist/instrumentation/')
    ? [[path, { types: target.types.replace('/instrumentation/', '/'), default: target.default.replace('/instrumentation/', '/') }] as const]
    : [],
);

const pick = (from: Record<string, string>, field: string, names: readonly string[]) =>
  Object.fromEntries(
    names.map((name) => {
      if (!from[name]) throw new Error(`[build] ${name} is not in the root package.json's ${field}`);
      return [name, from[name]];
    }),
  );

const limiterDir = join(dist, 'packages', LIMITER_PACKAGE);
const limiterFiles = join(limiterDir, 'dist');
mkdirSync(limiterDir, { recursive: true });
cpSync(join(dist, 'instrumentation'), limiterFiles, { recursive: true });
cpSync(join(root, 'instrumentation', 'README.md'), join(limiterDir, 'README.md'));

// The library's compiled files may import only each other, node: built-ins, its dependencies
// and its peers (instrumentation/ imports none of the other folders).
const declared = new Set<string>([...LIMITER_DEPENDENCIES, ...LIMITER_PEERS, ...LIMITER_OPTIONAL_PEERS]);
const builtins = new Set(builtinModules);
for (const file of readdirSync(limiterFiles, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'))) {
  const text = readFileSync(join(limiterFiles, file), 'utf8');
  for (const [, specifier] of text.matchAll(/(?:from|import\()\s*['"]([^'"]+)['"]/g)) {
    if (specifier.startsWith('.')) {
      const target = relative(limiterFiles, join(limiterFiles, dirname(file), specifier));
      if (target.startsWith('..')) throw new Error(`[build] ${LIMITER_PACKAGE}: ${file} imports ${specifier}, outside instrumentation/`);
      continue;
    }
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
    if (!specifier.startsWith('node:') && !builtins.has(name) && !declared.has(name)) {
      throw new Error(`[build] ${LIMITER_PACKAGE}: ${file} imports ${specifier}, which is not among its dependencies or peers`);
    }
  }
}

const limiterManifest = {
  name: LIMITER_PACKAGE,
  version: manifest.version,
  description: 'RateLimitedLlm for Google ADK: one concurrency limit and tokens-per-minute budget shared by every agent of a fan-out, with Prometheus and OpenTelemetry metrics.',
  type: 'module',
  license: manifest.license,
  keywords: ['adk', 'gemini', 'rate-limit', 'quota', 'llm', 'prometheus'],
  files: ['dist', 'README.md'],
  exports: { ...Object.fromEntries(LIMITER_ENTRIES), './package.json': './package.json' },
  types: Object.fromEntries(LIMITER_ENTRIES)['.'].types,
  engines: manifest.engines,
  dependencies: pick(manifest.dependencies, 'dependencies', LIMITER_DEPENDENCIES),
  peerDependencies: {
    ...pick(manifest.peerDependencies, 'peerDependencies', LIMITER_PEERS),
    ...pick(manifest.dependencies, 'dependencies', LIMITER_OPTIONAL_PEERS),
  },
  peerDependenciesMeta: Object.fromEntries(LIMITER_OPTIONAL_PEERS.map((name) => [name, { optional: true }])),
};
writeFileSync(join(limiterDir, 'package.json'), `${JSON.stringify(limiterManifest, null, 2)}\n`);
console.log(`[build] wrote ${limiterDir} (npm pack ./${relative(root, limiterDir)})`);
