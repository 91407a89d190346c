// The generator is deterministic and its --check mode catches stale, missing and extra files.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { generatedPaths } from '../../dashboards/files.ts';
import { differences, generatedDir, writeGenerated } from '../../dashboards/generate.ts';

const run = promisify(execFile);
const scratchDirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'qs-dash-test-'));
  scratchDirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of scratchDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function snapshot(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path));
    }
  };
  walk(dir);
  return files;
}

describe('dashboards generator', () => {
  it('writes the same bytes twice', () => {
    const a = scratch();
    const b = scratch();
    writeGenerated(a);
    writeGenerated(b);
    const first = snapshot(a);
    const second = snapshot(b);
    expect([...first.keys()].sort()).toEqual([...second.keys()].sort());
    for (const [path, content] of first) expect(second.get(path)?.equals(content), path).toBe(true);
  });

  it('writes every provisioning file the compose stack mounts', () => {
    const dir = scratch();
    const written = writeGenerated(dir);
    for (const path of Object.values(generatedPaths).filter((p) => p !== generatedPaths.dashboardsDir)) {
      expect(written).toContain(path);
    }
    expect(written.filter((p) => p.startsWith(`${generatedPaths.dashboardsDir}/`)).length).toBe(3);
  });

  it('the committed generated folder is up to date', () => {
    expect(differences(generatedDir)).toEqual([]);
  });

  it('--check names a stale, a missing and an extra file', () => {
    const dir = scratch();
    writeGenerated(dir);
    writeFileSync(join(dir, generatedPaths.rules), 'groups: []\n');
    rmSync(join(dir, generatedPaths.datasource));
    writeFileSync(join(dir, 'stray.yml'), 'x: 1\n');
    expect(differences(dir)).toEqual([
      `${generatedPaths.datasource} (missing)`,
      `${generatedPaths.rules} (differs)`,
      'stray.yml (not generated any more)',
    ]);
  });

  it('the CLI --check exits 0 on the committed files and 2 on an unknown flag', async () => {
    const script = join(generatedDir, '..', 'generate.ts');
    const ok = await run(process.execPath, [script, '--check']);
    expect(ok.stdout).toContain('up to date');
    await expect(run(process.execPath, [script, '--bogus'])).rejects.toMatchObject({ code: 2 });
  });
});
