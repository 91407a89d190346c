// The generator is deterministic, its --check mode catches stale, missing and extra files,
// and the CLI takes a user's config (--config FILE --out DIR) with one-line errors.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { generatedPaths } from '../../dashboards/files.ts';
import { differences, generatedDir, helmDifferences, helmFilesDir, writeGenerated, writeHelmFiles } from '../../dashboards/generate.ts';

const run = promisify(execFile);
const bin = join(generatedDir, '..', '..', 'cli', 'quotascope.ts');
const example = join(generatedDir, '..', 'examples', 'custom-stack.yaml');
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

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, 'dashboards', ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
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

  it('writes every provisioning file the compose stack mounts, and the Kubernetes shapes', () => {
    const dir = scratch();
    const written = writeGenerated(dir);
    const folders: string[] = [generatedPaths.dashboardsDir, generatedPaths.dashboardConfigMapsDir];
    for (const path of Object.values(generatedPaths).filter((p) => !folders.includes(p))) expect(written).toContain(path);
    expect(written.filter((p) => p.startsWith(`${generatedPaths.dashboardsDir}/`)).length).toBe(3);
    expect(written.filter((p) => p.startsWith(`${generatedPaths.dashboardConfigMapsDir}/`)).length).toBe(3);
  });

  it('the committed generated folder and the Helm chart files are up to date', () => {
    expect(differences(generatedDir)).toEqual([]);
    expect(helmDifferences(helmFilesDir)).toEqual([]);
  });

  it('the Helm chart files are the rules file and the dashboard JSON, byte for byte', () => {
    const dir = scratch();
    writeGenerated(dir);
    const helm = scratch();
    writeFileSync(join(helm, 'values-note.txt'), 'not generated\n');
    expect(writeHelmFiles(helm).sort()).toEqual(['dashboards/quotascope-limiter.json', 'dashboards/quotascope-loadtest.json', 'dashboards/quotascope-mock-provider.json', 'rules.yml']);
    expect(readFileSync(join(helm, 'rules.yml')).equals(readFileSync(join(dir, generatedPaths.rules)))).toBe(true);
    for (const name of readdirSync(join(helm, 'dashboards'))) {
      expect(readFileSync(join(helm, 'dashboards', name)).equals(readFileSync(join(dir, generatedPaths.dashboardsDir, name))), name).toBe(true);
    }
    // Files the generator does not own are left alone and not reported.
    expect(readFileSync(join(helm, 'values-note.txt'), 'utf8')).toBe('not generated\n');
    expect(helmDifferences(helm)).toEqual([]);
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

  it('the command refuses --config alone', async () => {
    const alone = await cli('--config', 'c.yaml');
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/^dashboards: --config needs --out/);
  });
});

describe('quotascope dashboards CLI', () => {
  it('--check exits 0 on the committed files and 2 on an unknown flag', async () => {
    const ok = await cli('--check');
    expect(ok.stdout).toContain('up to date');
    expect(ok.code).toBe(0);
    const bad = await cli('--bogus');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^dashboards: .*bogus/);
  });

  it('--config FILE --out DIR writes the example stack, and --check then passes on it', async () => {
    const out = scratch();
    const written = await cli('--config', example, '--out', out);
    expect(written.code, written.stderr).toBe(0);
    expect(written.stdout).toContain('wrote 10 files');
    const datasource = parse(readFileSync(join(out, generatedPaths.datasource), 'utf8'));
    expect(datasource.datasources[0].uid).toBe('my-prom');
    expect(readdirSync(join(out, generatedPaths.dashboardsDir)).sort()).toEqual(['quotascope-limiter.json', 'quotascope-loadtest.json']);
    expect((await cli('--config', example, '--out', out, '--check')).code).toBe(0);
    writeFileSync(join(out, generatedPaths.rules), 'groups: []\n');
    const stale = await cli('--config', example, '--out', out, '--check');
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`${generatedPaths.rules} (differs)`);
  });

  it('takes a JSON config as well', async () => {
    const dir = scratch();
    const file = join(dir, 'stack.json');
    writeFileSync(file, JSON.stringify({ selectors: { agent: 'namespace="prod"', mockProvider: null }, datasource: { uid: 'prod-prom' } }));
    const result = await cli('--config', file, '--out', join(dir, 'out'));
    expect(result.code, result.stderr).toBe(0);
    const rules = readFileSync(join(dir, 'out', generatedPaths.rules), 'utf8');
    expect(rules).toContain('llm_limiter_permits_in_use{namespace="prod"}');
    expect(parse(readFileSync(join(dir, 'out', generatedPaths.alerting), 'utf8')).groups[0].rules[0].data[0].datasourceUid).toBe('prod-prom');
  });

  it('a bad config is one line naming the file and the field, exit 2', async () => {
    const dir = scratch();
    const cases: [string, RegExp][] = [
      ['thresholds:\n  acquireWarnFractionOfMaxWait: 3\n', /thresholds\.acquireWarnFractionOfMaxWait: .*<=1/],
      ['selectors:\n  agent: \'job="my-agents\'\n', /selectors\.agent: not a list of label matchers/],
      ['datasource:\n  uid: "has spaces"\n', /datasource\.uid: a Grafana uid/],
      ['alerts:\n  severity:\n    LimiterTimeouts: page\n', /alerts\.severity\.LimiterTimeouts: /],
      ['alerts:\n  for:\n    NoSuchAlert: 5m\n', /alerts\.for: Unrecognized key: "NoSuchAlert"/],
      ['windows:\n  rate: 5 minutes\n', /windows\.rate: "5 minutes" is not a Prometheus duration/],
      ['colour: blue\n', /\(top level\): Unrecognized key: "colour"/],
      ['selectors: [1, 2\n', /not YAML or JSON/],
    ];
    for (const [text, message] of cases) {
      const file = join(dir, 'config.yaml');
      writeFileSync(file, text);
      const result = await cli('--config', file, '--out', join(dir, 'out'));
      expect(result.code, text).toBe(2);
      expect(result.stderr.trim().split('\n'), text).toHaveLength(1);
      expect(result.stderr, text).toContain(file);
      expect(result.stderr, text).toMatch(message);
    }
    const missing = await cli('--config', join(dir, 'nope.yaml'), '--out', join(dir, 'out'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/nope\.yaml: cannot read \(ENOENT\)/);
  });
});
