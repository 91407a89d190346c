// replaceFiles / replaceFile / replaceFolder: what a command writes replaces what was there
// only when all of it is written; a failure leaves every file as it was and nothing staged.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { replaceFile, replaceFiles, replaceFolder } from '../../shared/replace-files.ts';

const scratch = mkdtempSync(join(tmpdir(), 'qs-replace-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const dir = join(scratch, String(n++));
  mkdirSync(dir);
  return dir;
};

function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else out[relative(dir, path)] = readFileSync(path, 'utf8');
    }
  };
  walk(dir);
  return out;
}

const name = fc.constantFrom('a.txt', 'b.yml', 'sub/c.json', 'sub/deeper/d.html');

describe('replaceFiles', () => {
  it('property: success writes every file; a failure half-way changes nothing and leaves nothing staged', () => {
    fc.assert(
      fc.property(fc.dictionary(name, fc.string()), fc.dictionary(name, fc.string()), fc.boolean(), (old, next, breakIt) => {
        const dir = fresh();
        for (const [path, text] of Object.entries(old)) {
          mkdirSync(join(dir, path, '..'), { recursive: true });
          writeFileSync(join(dir, path), text);
        }
        const files = new Map(Object.entries(next));
        // A file where the last new file's folder must go makes its write fail after the others.
        if (breakIt) files.set('blocked/x.txt', 'x');
        if (breakIt) writeFileSync(join(dir, 'blocked'), 'a file, not a folder');
        const before = contents(dir);
        if (breakIt) {
          expect(() => replaceFiles(dir, files)).toThrow();
          expect(contents(dir)).toEqual(before);
        } else {
          replaceFiles(dir, files);
          expect(contents(dir)).toEqual({ ...old, ...next });
        }
      }),
      { numRuns: 60 },
    );
  });

  it('replaceFile takes a bare file name (relative to the working folder) as well', () => {
    const dir = fresh();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      replaceFile('trace.jsonl', 'x\n');
    } finally {
      process.chdir(cwd);
    }
    expect(contents(dir)).toEqual({ 'trace.jsonl': 'x\n' });
  });
});

describe('replaceFolder', () => {
  it('a failing fill leaves the folder as it was; a successful one replaces it whole', async () => {
    const dir = join(fresh(), 'shots');
    mkdirSync(dir);
    writeFileSync(join(dir, 'old.png'), 'old');
    await expect(
      replaceFolder(dir, async (staging) => {
        writeFileSync(join(staging, 'new.png'), 'new');
        throw new Error('chromium died');
      }),
    ).rejects.toThrow('chromium died');
    expect(contents(dir)).toEqual({ 'old.png': 'old' });
    expect(readdirSync(join(dir, '..'))).toEqual(['shots']);
    expect(await replaceFolder(dir, async (staging) => writeFileSync(join(staging, 'new.png'), 'new'))).toBeUndefined();
    expect(contents(dir)).toEqual({ 'new.png': 'new' });
    expect(existsSync(join(dir, 'old.png'))).toBe(false);
  });
});

describe('a folder that cannot be written', () => {
  /** A read-only folder: a read-only tmpfs when running as root (root writes through modes), else mode 0555. */
  function readOnlyFolder(): { dir: string; release(): void } | undefined {
    const dir = fresh();
    if (process.getuid?.() !== 0) {
      chmodSync(dir, 0o555);
      return { dir, release: () => chmodSync(dir, 0o755) };
    }
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', dir]).status !== 0) return undefined;
    return { dir, release: () => spawnSync('umount', [dir]) };
  }

  it('is named, with its cause (EROFS or EACCES), instead of ENOENT on a folder below it', (context) => {
    const folder = readOnlyFolder();
    if (!folder) return context.skip('root without mount: no read-only folder to test');
    try {
      expect(() => replaceFiles(join(folder.dir, 'dashboards'), new Map([['grafana/a.json', '{}']]))).toThrow(
        new RegExp(`^cannot create .*: ${folder.dir} (is on a read-only file system \\(EROFS\\)|is not writable \\(EACCES\\))$`),
      );
    } finally {
      folder.release();
    }
  });
});
