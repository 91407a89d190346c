// What `quotascope dashboards` tells a user about their own folder: --help says what --out
// does to it (files are written, the folder is not emptied), --check names the command that
// regenerates it, and the provisioned datasource does not take over their default.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { dashboardsCommand } from '../../cli/dashboards.ts';
import { defaultConfig } from '../../dashboards/config.ts';
import { generatedFiles, generatedPaths } from '../../dashboards/files.ts';
import { runDashboards, writeGenerated } from '../../dashboards/generate.ts';

const dir = mkdtempSync(join(tmpdir(), 'qs-dashboards-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('dashboards for a user\'s own folder', () => {
  it('--help says --out keeps the files already there', () => {
    const help = dashboardsCommand().helpInformation();
    expect(help).not.toContain('emptied');
    expect(help.replace(/\s+/g, ' ')).toContain('--out <dir> folder to write the generated files into (files of your own there are left as they are)');
  });

  it('--out writes without emptying the folder; --check names the command for that folder', () => {
    const out = join(dir, 'mine');
    writeGenerated(out, defaultConfig, false);
    writeFileSync(join(out, 'my-notes.txt'), 'mine');
    writeFileSync(join(out, generatedPaths.rules), 'stale');
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line: string) => void errors.push(line));
    try {
      expect(runDashboards({ out, check: true })).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(errors.join('\n')).toContain(`run \`quotascope dashboards --out ${out}\``);
    expect(errors.join('\n')).not.toContain('npm run dashboards');
  });

  it('provisions the datasource without making it the default', () => {
    const datasource = parse(generatedFiles(defaultConfig).get(generatedPaths.datasource) as string).datasources[0];
    expect(datasource.isDefault).toBe(false);
  });
});
