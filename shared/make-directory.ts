// Creating a folder a command writes into. Node's recursive mkdir reports a parent it could
// not create as ENOENT ("no such file or directory, mkdir …") when the real cause is a
// read-only or unwritable folder above it; this names that folder and the cause instead.
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** mkdir -p; a folder that cannot be created because an existing one above it is read-only (EROFS) or not writable (EACCES) is named in the error. */
export function makeDirectory(path: string): void {
  try {
    mkdirSync(path, { recursive: true });
  } catch (error) {
    throw blockingFolderError(path, error) ?? error;
  }
}

/** The nearest existing folder above `path`, when it cannot be written: an error naming it; else undefined. */
function blockingFolderError(path: string, error: unknown): Error | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code !== 'ENOENT' && code !== 'EROFS' && code !== 'EACCES' && code !== 'EPERM') return undefined;
  let folder = resolve(path);
  while (!existsSync(folder) && dirname(folder) !== folder) folder = dirname(folder);
  try {
    accessSync(folder, constants.W_OK);
    return undefined;
  } catch (denied) {
    const why = (denied as NodeJS.ErrnoException).code === 'EROFS' ? 'is on a read-only file system (EROFS)' : `is not writable (${(denied as NodeJS.ErrnoException).code ?? 'EACCES'})`;
    return new Error(`cannot create ${path}: ${folder} ${why}`);
  }
}
