// The package as a user gets it: `npm pack` (which builds dist/), then the tarball installed
// into a scratch project with its own @google/adk and @google/genai, and Node 22 from npm.
// There: plain `node` imports (no type stripping) on Node 22 and 24 wrap ADK's Gemini in a
// RateLimitedLlm; tsc compiles a consumer with one ADK copy; the main entry loads no
// express, Grafana SDK, OTel SDK or Redis client; `npx quotascope` plans and serves the mock
// until SIGTERM.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../loadtest/stack/processes.ts';
import { plan, reviewAgentExample } from '../../loadtest/planner/index.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..');
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  peerDependencies: Record<string, string>;
  files: string[];
  exports: Record<string, string | { types: string; default: string }>;
  bin: Record<string, string>;
};
const scratch = mkdtempSync(join(tmpdir(), 'qs-package-'));
const consumer = join(scratch, 'consumer');
/** Node 22 as the consumer's own devDependency (the repo runs on the `node` 24 package). */
const node22 = join(consumer, 'node_modules', '.bin', 'node');
let tarball = '';
let packed: { files: { path: string }[]; size: number; entryCount: number };

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

beforeAll(async () => {
  // `npm pack` runs prepack, which is `npm run build`.
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch, '--loglevel=error'], { cwd: repo, maxBuffer: 16 * 1024 * 1024 });
  packed = JSON.parse(stdout.slice(stdout.indexOf('[\n')))[0]; // after the build's log lines
  tarball = join(scratch, readdirSync(scratch).find((f) => f.endsWith('.tgz')) as string);
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', allowScripts: { node: true } }));
  const peers = Object.entries(manifest.peerDependencies).map(([name, range]) => `${name}@${range}`);
  await run('npm', ['install', tarball, ...peers, 'node@>=22.12 <23', '@types/node@24', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
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
    expect(paths.filter((p) => /^dist\/(test|bench|docs)\//.test(p))).toEqual([]);
  });

  it('ships the k6 script as source with every .ts file it imports (k6 runs TypeScript itself)', () => {
    const paths = new Set(packed.files.map((f) => f.path));
    expect(paths.has('dist/loadtest/k6/run.ts')).toBe(true);
    const sources = [...paths].filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'));
    for (const source of sources) {
      for (const [, specifier] of readFileSync(join(repo, source.replace(/^dist\//, '')), 'utf8').matchAll(/from '(\.{1,2}\/[^']+\.ts)'/g)) {
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
});
