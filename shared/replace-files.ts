// How quotascope's commands write into a folder a user already has (a run folder, the
// dashboards' --out): every new file is written in full beside its target first and renamed
// over it only once all of them are written, so a command that fails leaves what was there.
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { makeDirectory } from './make-directory.ts';

/** The temporary name a file is written under before it replaces `path`. */
const stagingPath = (path: string) => `${path}.${process.pid}.partial`;

/**
 * Writes each file (path relative to `dir` → content) beside its target, then renames them
 * all into place; a failure while writing removes what was staged and rethrows, leaving every
 * existing file as it was. Returns the relative paths written.
 */
export function replaceFiles(dir: string, files: ReadonlyMap<string, string | Uint8Array>): string[] {
  const staged: [string, string][] = [];
  try {
    for (const [path, content] of files) {
      const target = join(dir, path);
      makeDirectory(dirname(target));
      // Staged before it is written: a write that fails half-way (a full disk) leaves a file to remove.
      staged.push([stagingPath(target), target]);
      writeFileSync(stagingPath(target), content);
    }
  } catch (error) {
    for (const [temporary] of staged) rmSync(temporary, { force: true });
    throw error;
  }
  for (const [temporary, target] of staged) renameSync(temporary, target);
  return [...files.keys()];
}

/** Writes one file through a temporary file beside it. */
export function replaceFile(path: string, content: string | Uint8Array): void {
  replaceFiles(dirname(path), new Map([[basename(path), content]]));
}

/**
 * Fills a new folder with `fill` beside `dir`, then puts it in place of `dir` (the old one is
 * removed only after the new one is in place). A failing `fill` leaves `dir` as it was.
 */
export async function replaceFolder<T>(dir: string, fill: (staging: string) => Promise<T>): Promise<T> {
  const staging = `${dir}.${process.pid}.partial`;
  const previous = `${dir}.${process.pid}.previous`;
  rmSync(staging, { recursive: true, force: true });
  makeDirectory(staging);
  let result: T;
  try {
    result = await fill(staging);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  const hadOne = existsSync(dir);
  if (hadOne) renameSync(dir, previous);
  renameSync(staging, dir);
  if (hadOne) rmSync(previous, { recursive: true, force: true });
  return result;
}
