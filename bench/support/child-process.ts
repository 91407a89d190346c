// Server processes the benchmarks start: each in its own Node child, so it has a core to
// itself as far as the OS allows, found by the URL it prints on stdout.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Starts a server script in a child process and returns its base URL (it prints one line with the URL). */
export async function startChild(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  for await (const chunk of child.stdout!) {
    output += String(chunk);
    const match = /http:\/\/[\d.]+:\d+/.exec(output);
    if (match) return { url: match[0], child };
  }
  throw new Error(`server exited before printing its URL: ${output}`);
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}
