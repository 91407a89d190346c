// `npm start` installs only the tools it uses: `scripts/tools.sh start` never needs helm
// (building it is about 2 of the 10 minutes of tool installs on a fresh machine), while the
// full set (`npm test`, `npm run tools`) still does.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { findTool } from '../../loadtest/stack/tools.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');
const bin = mkdtempSync(join(tmpdir(), 'qs-tools-'));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

/** tools.sh with a bin folder holding k6 but no helm, and no Go on PATH to build one. */
async function tools(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, QUOTASCOPE_BIN: bin, PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };
  try {
    const { stdout, stderr } = await run('bash', [join(repo, 'scripts/tools.sh'), ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('scripts/tools.sh sets', () => {
  const k6 = findTool('k6');
  it.skipIf(!k6 || !findTool('prometheus') || !findTool('promtool'))('start: k6, prometheus, promtool and chromium, without helm', async () => {
    symlinkSync(k6 as string, join(bin, 'k6'));
    const start = await tools('start');
    expect(start.stderr).toBe('');
    expect(start.code).toBe(0);
    expect(start.stdout).toMatch(/^k6: /m);
    expect(start.stdout).not.toMatch(/helm/);
    const all = await tools();
    expect(all.code).toBe(1);
    expect(all.stderr).toMatch(/^tools: helm is missing; install it with: go install helm\.sh/m);
  });

  it('npm start uses the start set; npm test the whole one', () => {
    const scripts = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.start).toContain('bash scripts/tools.sh start');
    expect(readFileSync(join(repo, 'scripts/test.sh'), 'utf8')).toMatch(/^bash scripts\/tools\.sh$/m);
  });

  it('the README install line carries the overrides @google/adk-devtools needs, the same as package.json', () => {
    const readme = readFileSync(join(repo, 'README.md'), 'utf8');
    const overrides = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).overrides as Record<string, string>;
    const block = /```json\n"overrides": (\{[\s\S]*?\})\n```/.exec(readme.slice(0, readme.indexOf('**Your own agent**')));
    expect(block, 'an overrides block before "Your own agent"').not.toBeNull();
    expect(JSON.parse((block as RegExpExecArray)[1])).toEqual(overrides);
  });

  it('an unknown set is refused', async () => {
    const result = await tools('everything');
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe("tools: unknown set 'everything' (all or start)");
  });
});
