// The packages as a user gets them: `npm pack` (which builds dist/ and stages the library
// package), the tarballs installed into scratch projects with their own @google/adk and
// @google/genai, and Node 22 from npm.
// - quotascope (the CLI package): plain `node` imports (no type stripping) on Node 22 and 24
//   wrap ADK's Gemini in a RateLimitedLlm; tsc compiles a consumer with one ADK copy; the
//   main entry loads no express, Grafana SDK, OTel SDK or Redis client; `npx quotascope`
//   plans, serves the mock until SIGTERM, and runs a short `start` end to end.
// - quotascope-limiter (the library): at most 3 dependencies of its own; beside ADK and genai
//   it adds at most 10 packages (`npm ls --all --parseable`); its Redis entry needs the
//   optional `redis` peer and loads once that is installed.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../loadtest/stack/processes.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { plan, reviewAgentExample } from '../../loadtest/planner/index.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..');
interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  files: string[];
  exports: Record<string, string | { types: string; default: string }>;
  bin: Record<string, string>;
}
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as Manifest;
/** Where the build stages the library package (scripts/build.ts). */
const LIBRARY_DIR = join(repo, 'dist', 'packages', 'quotascope-limiter');
const scratch = mkdtempSync(join(tmpdir(), 'qs-package-'));
const consumer = join(scratch, 'consumer');
/** Node 22 as the consumer's own devDependency (the repo runs on the `node` 24 package). */
const node22 = join(consumer, 'node_modules', '.bin', 'node');
const INSTALL_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];
let tarball = '';
let packed: { files: { path: string }[]; size: number; entryCount: number };
let libraryTarball = '';
let libraryPacked: { files: { path: string }[] };

// Two projects' node_modules and a run's reports: removed asynchronously, given the time a busy disk needs.
afterAll(() => rm(scratch, { recursive: true, force: true }), 600_000);

/** `npm pack --json` of `dir` into the scratch folder: the tarball's path and its file list. */
async function pack(dir: string): Promise<[string, { files: { path: string }[]; size: number; entryCount: number }]> {
  const { stdout } = await run('npm', ['pack', dir, '--json', '--pack-destination', scratch, '--loglevel=error'], { cwd: repo, maxBuffer: 16 * 1024 * 1024 });
  const [result] = JSON.parse(stdout.slice(stdout.indexOf('[\n'))); // after the build's log lines
  return [join(scratch, result.filename), result];
}

beforeAll(async () => {
  // `npm pack` runs prepack, which is `npm run build` (it stages the library package too).
  [tarball, packed] = await pack('.');
  [libraryTarball, libraryPacked] = await pack(LIBRARY_DIR);
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', allowScripts: { node: true } }));
  const peers = Object.entries(manifest.peerDependencies).map(([name, range]) => `${name}@${range}`);
  await run('npm', ['install', tarball, ...peers, 'node@>=22.12 <23', '@types/node@24', ...INSTALL_FLAGS], {
    cwd: consumer,
    maxBuffer: 16 * 1024 * 1024,
  });
}, 400_000);

describe('the tarball', () => {
  it('holds dist/, the README and package.json: no sources, tests, bench or docs', () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths).toContain('README.md');
    expect(paths).toContain('package.json');
    expect(paths).toContain(manifest.bin.quotascope);
    const outside = paths.filter((p) => !p.startsWith('dist/') && p !== 'README.md' && p !== 'package.json');
    expect(outside).toEqual([]);
    expect(paths.filter((p) => /^dist\/(test|bench|docs|packages)\//.test(p))).toEqual([]);
  });

  it('ships the k6 script as source with every .ts file it imports (k6 runs TypeScript itself)', () => {
    const paths = new Set(packed.files.map((f) => f.path));
    expect(paths.has('dist/k6/loadtest/k6/run.ts')).toBe(true);
    const sources = [...paths].filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'));
    // No source sits beside a declaration: a consumer's tsc would resolve imports to the source.
    expect(sources.filter((p) => paths.has(p.replace(/\.ts$/, '.d.ts')))).toEqual([]);
    for (const source of sources) {
      for (const [, specifier] of readFileSync(join(repo, source.replace(/^dist\/k6\//, '')), 'utf8').matchAll(/from '(\.{1,2}\/[^']+\.ts)'/g)) {
        expect(paths, `${source} imports ${specifier}`).toContain(posix.join(posix.dirname(source), specifier));
      }
    }
  });

  it('every export has its types and its JavaScript', () => {
    for (const [entry, target] of Object.entries(manifest.exports)) {
      if (typeof target === 'string') continue;
      const paths = packed.files.map((f) => `./${f.path}`);
      expect(paths, entry).toContain(target.types);
      expect(paths, entry).toContain(target.default);
    }
  });
});

describe('installed in a project of its own', () => {
  const check = `
    import { Gemini } from '@google/adk';
    import { RateLimitedLlm, TokenBudget, limiterMetrics } from 'quotascope';
    const llm = new RateLimitedLlm({ delegate: new Gemini({ model: 'gemini-2.5-flash', apiKey: 'unused' }), name: 'gemini', maxConcurrent: 4, budget: new TokenBudget(300_000) });
    console.log(JSON.stringify({ node: process.version, model: llm.model, metric: limiterMetrics.permitsInUse.name }));
  `;

  it.each([
    ['22', () => node22, [] as string[]],
    ['24', () => process.execPath, ['--no-experimental-strip-types']],
  ])('plain node %s imports it and wraps ADK Gemini in a RateLimitedLlm', async (major, node, flags) => {
    writeFileSync(join(consumer, 'check.mjs'), check);
    const { stdout } = await run(node(), [...flags, 'check.mjs'], { cwd: consumer });
    const out = JSON.parse(stdout);
    expect(out.node).toMatch(new RegExp(`^v${major}\\.`));
    expect(out).toMatchObject({ model: 'gemini-2.5-flash', metric: 'llm_limiter_permits_in_use' });
  });

  it('on an older Node the bin names the Node it needs, in one line (exit 1)', async (ctx) => {
    // The machines ship Node 20 as /usr/bin/node; elsewhere there may be none to try.
    const old = '/usr/bin/node';
    const version = existsSync(old) ? (await run(old, ['--version'])).stdout.trim() : '';
    if (!/^v(1\d|2[01])\./.test(version)) return ctx.skip();
    const bin = join(consumer, 'node_modules', 'quotascope', manifest.bin.quotascope);
    const result = (await run(old, [bin, 'plan', '--agent', 'agent.ts'], { cwd: consumer }).catch((error) => error)) as { code?: number; stderr: string };
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(`quotascope needs Node >= 22.12.0; this is Node ${version.slice(1)} (install a current LTS, e.g. with nvm install 24)`);
  });

  it('resolves one ADK copy: the project’s own', () => {
    expect(existsSync(join(consumer, 'node_modules', '@google', 'adk'))).toBe(true);
    expect(existsSync(join(consumer, 'node_modules', 'quotascope', 'node_modules', '@google', 'adk'))).toBe(false);
    expect(existsSync(join(consumer, 'node_modules', 'quotascope', 'node_modules', '@google', 'genai'))).toBe(false);
  });

  it('a consumer .ts compiles with tsc against the shipped .d.ts (no duplicate-ADK type error)', async () => {
    writeFileSync(
      join(consumer, 'consumer.ts'),
      `
      import { Gemini, LlmAgent } from '@google/adk';
      import { RateLimitedLlm, TokenBudget } from 'quotascope';
      import { plan, reviewAgentExample } from 'quotascope/planner';
      import { startMockProvider } from 'quotascope/mock-provider';
      import { ManualClock } from 'quotascope/testing';
      import { RedisTokenBudget } from 'quotascope/redis';

      const model = new RateLimitedLlm({ delegate: new Gemini({ model: 'gemini-2.5-flash' }), name: 'gemini', maxConcurrent: 10, budget: new TokenBudget(300_000) });
      export const agent = new LlmAgent({ name: 'reviewer', model, instruction: 'review the document' });
      export const permits: number = plan(reviewAgentExample).perReplica.permits;
      export const mock: Promise<{ url: string; close(): Promise<void> }> = startMockProvider({}, { port: 0 });
      export const clock = new ManualClock();
      export type Shared = RedisTokenBudget;
      `,
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: consumer }).catch((error) => error);
    expect(`${result.stdout ?? ''}${result.stderr ?? ''}`).toBe('');
  });

  it('the main entry loads no express, Grafana SDK, OTel SDK or Redis client beyond what ADK itself loads', async () => {
    // A resolve hook records every package a module graph reaches.
    writeFileSync(
      join(consumer, 'record-packages.mjs'),
      `
      import { registerHooks } from 'node:module';
      const seen = new Set();
      registerHooks({
        resolve(specifier, context, next) {
          const result = next(specifier, context);
          const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\/(?!.*node_modules\\/)/.exec(result.url);
          if (match) seen.add(match[1]);
          return result;
        },
      });
      process.on('exit', () => process.stderr.write(JSON.stringify([...seen].sort())));
      `,
    );
    const packagesLoadedBy = async (entry: string): Promise<string[]> => {
      const { stderr } = await run(node22, ['--import', './record-packages.mjs', '-e', `await import(${JSON.stringify(entry)})`], { cwd: consumer });
      return JSON.parse(stderr);
    };
    const adk = new Set(await packagesLoadedBy('@google/adk'));
    const main = await packagesLoadedBy('quotascope');
    expect(main).toContain('quotascope');
    expect(main).toContain('@google/adk');
    const added = main.filter((name) => !adk.has(name));
    const heavy = /^(express|redis|@redis\/|@grafana\/|@opentelemetry\/(sdk-|exporter-|auto-))/;
    expect(added.filter((name) => heavy.test(name))).toEqual([]);
    expect(main.filter((name) => /^(express|redis|@redis\/|@grafana\/|@opentelemetry\/sdk-node)$/.test(name))).toEqual([]);
    // The check can see them: the Redis entry does load the Redis client.
    expect(await packagesLoadedBy('quotascope/redis')).toContain('@redis/client');
  });

  it('npx quotascope plan --example review-agent --json', async () => {
    const { stdout } = await run('npx', ['quotascope', 'plan', '--example', 'review-agent', '--json'], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual(JSON.parse(JSON.stringify(plan(reviewAgentExample))));
  });

  it('npx quotascope mock-provider serves on a free port until SIGTERM to the process started', async () => {
    const port = await freePort();
    const child = spawn('npx', ['quotascope', 'mock-provider', '--port', String(port)], { cwd: consumer, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      for await (const chunk of child.stdout) {
        out += String(chunk);
        if (out.includes('\n')) break;
      }
      expect(out).toContain(`listening on http://127.0.0.1:${port} `);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    await once(child, 'exit');
    // npx runs the bin through `sh -c`; the bin follows npx's lifetime, so the port closes.
    let open = true;
    for (let i = 0; i < 50 && open; i++) {
      open = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(500) }).then(
        () => true,
        () => false,
      );
      if (open) await new Promise((r) => setTimeout(r, 100));
    }
    expect(open).toBe(false);
  });
  it('npx quotascope start: a short run of the whole stack from the installed package', { timeout: 300_000 }, async () => {
    requireTool('k6');
    requireTool('prometheus');
    const reports = join(scratch, 'reports');
    const flags = ['--duration', '10', '--rate', '60', '--call-seconds', '0.5', '--tokens', '1000', '--replicas', '2', '--burst-users', '3', '--report-dir', reports];
    const result = await run('npx', ['quotascope', 'start', ...flags], { cwd: consumer, maxBuffer: 16 * 1024 * 1024, timeout: 280_000 }).catch((error) => error);
    expect(result.code ?? 0, `${result.stdout}${result.stderr}`).toBe(0);
    const [runId] = readdirSync(reports);
    const summary = JSON.parse(readFileSync(join(reports, runId, 'summary.json'), 'utf8'));
    expect(summary.k6ExitCode).toBe(0);
    expect(summary.k6.requests).toBeGreaterThanOrEqual(13);
    expect(summary.k6.failedRate).toBe(0);
    expect(summary.stack.requests).toBe(summary.k6.requests);
    expect(summary.stack.modelCalls).toBe(5 * summary.k6.requests);
    expect(existsSync(join(reports, runId, 'index.html'))).toBe(true);
  });
});

describe('the library package (quotascope-limiter), installed beside ADK and genai', () => {
  const library = join(scratch, 'library');
  let libraryManifest: Manifest;
  const peers = ['@google/adk', '@google/genai'].map((name) => `${name}@${manifest.peerDependencies[name]}`);
  /** Every package of the project's tree, by path under the project (`npm ls --all --parseable`). */
  const installed = async (): Promise<Set<string>> => {
    const { stdout } = await run('npm', ['ls', '--all', '--parseable'], { cwd: library, maxBuffer: 16 * 1024 * 1024 });
    return new Set(stdout.trim().split('\n').map((path) => relative(library, path)).filter((path) => path !== ''));
  };
  let alone = new Set<string>();
  let withLibrary = new Set<string>();

  beforeAll(async () => {
    libraryManifest = JSON.parse(readFileSync(join(LIBRARY_DIR, 'package.json'), 'utf8'));
    mkdirSync(library);
    writeFileSync(join(library, 'package.json'), JSON.stringify({ name: 'agent', private: true, type: 'module' }));
    await run('npm', ['install', ...peers, ...INSTALL_FLAGS], { cwd: library, maxBuffer: 16 * 1024 * 1024 });
    alone = await installed();
    await run('npm', ['install', libraryTarball, ...INSTALL_FLAGS], { cwd: library, maxBuffer: 16 * 1024 * 1024 });
    withLibrary = await installed();
  }, 400_000);

  it('holds its compiled files, README and package.json, with at most 3 dependencies and redis as an optional peer', () => {
    const paths = libraryPacked.files.map((f) => f.path);
    expect(paths.filter((p) => !p.startsWith('dist/') && p !== 'README.md' && p !== 'package.json')).toEqual([]);
    for (const target of Object.values(libraryManifest.exports)) {
      if (typeof target === 'string') continue;
      expect(paths.map((p) => `./${p}`)).toEqual(expect.arrayContaining([target.types, target.default]));
    }
    expect(Object.keys(libraryManifest.dependencies ?? {}).length).toBeLessThanOrEqual(3);
    expect(libraryManifest.dependencies).not.toHaveProperty('redis');
    expect(libraryManifest.peerDependencies).toHaveProperty('redis');
    expect(libraryManifest.peerDependenciesMeta?.redis?.optional).toBe(true);
  });

  it('adds at most 10 packages to a project that has @google/adk and @google/genai', () => {
    const added = [...withLibrary].filter((path) => !alone.has(path));
    expect(added).toContain(join('node_modules', 'quotascope-limiter'));
    expect(added.length, added.join(', ')).toBeLessThanOrEqual(10);
  });

  it('plain node 22 imports it and wraps ADK Gemini in a RateLimitedLlm; the Redis entry needs the optional redis peer', async () => {
    writeFileSync(
      join(library, 'check.mjs'),
      `
      import { Gemini } from '@google/adk';
      import { RateLimitedLlm, TokenBudget, limiterMetrics } from 'quotascope-limiter';
      import { ManualClock } from 'quotascope-limiter/testing';
      const llm = new RateLimitedLlm({ delegate: new Gemini({ model: 'gemini-2.5-flash', apiKey: 'unused' }), name: 'gemini', maxConcurrent: 4, budget: new TokenBudget(300_000) });
      console.log(JSON.stringify({ node: process.version, model: llm.model, metric: limiterMetrics.permitsInUse.name, clock: new ManualClock().now() }));
      `,
    );
    const { stdout } = await run(node22, ['check.mjs'], { cwd: library });
    expect(JSON.parse(stdout)).toMatchObject({ node: expect.stringMatching(/^v22\./), model: 'gemini-2.5-flash', metric: 'llm_limiter_permits_in_use', clock: 0 });

    const importRedisEntry = ['-e', "const { RedisTokenBudget } = await import('quotascope-limiter/redis'); console.log(typeof RedisTokenBudget)"];
    const missing = await run(node22, importRedisEntry, { cwd: library }).catch((error) => error);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/Cannot find package 'redis'/);
    await run('npm', ['install', `redis@${libraryManifest.peerDependencies.redis}`, ...INSTALL_FLAGS], { cwd: library, maxBuffer: 16 * 1024 * 1024 });
    expect((await run(node22, importRedisEntry, { cwd: library })).stdout.trim()).toBe('function');
  });

  it('a consumer .ts compiles with tsc against its .d.ts', async () => {
    writeFileSync(
      join(library, 'agent.ts'),
      `
      import { Gemini, LlmAgent } from '@google/adk';
      import { RateLimitedLlm, RateLimitTimeout, TokenBudget } from 'quotascope-limiter';
      import { RedisTokenBudget } from 'quotascope-limiter/redis';
      import { FakeLlm } from 'quotascope-limiter/testing';

      const model = new RateLimitedLlm({ delegate: new Gemini({ model: 'gemini-2.5-flash' }), name: 'gemini', maxConcurrent: 10, budget: new TokenBudget(300_000) });
      export const agent = new LlmAgent({ name: 'reviewer', model, instruction: 'review the document' });
      export const fake: FakeLlm | undefined = undefined;
      export type Shared = RedisTokenBudget;
      export const isTimeout = (error: unknown): boolean => error instanceof RateLimitTimeout;
      `,
    );
    writeFileSync(
      join(library, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: [] },
        files: ['agent.ts'],
      }),
    );
    const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: library }).catch((error) => error);
    expect(`${result.stdout ?? ''}${result.stderr ?? ''}`).toBe('');
  });
});
