// A signal sent to the `npm run …` process stops the server behind it: the npm scripts
// `exec` the bin, so node is npm's own child and gets the signal npm passes on.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../loadtest/stack/processes.ts';

const repo = join(import.meta.dirname, '..', '..');
const started: ChildProcess[] = [];
afterAll(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** pid → [ppid, command line] of every process now. */
function processTable(): Map<number, [number, string]> {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' }).trim().split('\n');
  return new Map(
    rows.map((row) => {
      const [pid, ppid, ...args] = row.trim().split(/\s+/);
      return [Number(pid), [Number(ppid), args.join(' ')]];
    }),
  );
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}

describe.each(['SIGTERM', 'SIGINT'] as const)('npm run mock-provider, then %s to npm', (signal) => {
  it('stops the server: node is npm’s direct child, and the port is closed afterwards', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['run', '--silent', 'mock-provider', '--', '--port', String(port)], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(npm);
    let out = '';
    npm.stdout?.on('data', (d) => {
      out += d;
    });
    npm.stderr?.on('data', (d) => {
      out += d;
    });
    const deadline = Date.now() + 30_000;
    while (!out.includes('listening on') && npm.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain(`listening on http://127.0.0.1:${port} `);
    expect(await answers(`http://127.0.0.1:${port}/healthz`)).toBe(true);

    const table = processTable();
    const children = [...table].filter(([, [ppid]]) => ppid === npm.pid).map(([pid, [, args]]) => ({ pid, args }));
    const server = children.find((c) => c.args.includes('quotascope.ts mock-provider'));
    expect(server, JSON.stringify(children)).toBeDefined(); // no `sh -c` in between

    npm.kill(signal);
    await once(npm, 'exit');
    const gone = Date.now() + 10_000;
    while (processTable().has(server?.pid as number) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
    expect(processTable().has(server?.pid as number)).toBe(false);
    expect(await answers(`http://127.0.0.1:${port}/healthz`)).toBe(false);
  }, 60_000);
});
