// `npm start` (quotascope start) or `npm run loadtest` (quotascope loadtest) as a user
// runs it, as a child process: its exit, its output, every process seen below it while it ran
// and the URLs it printed, and the check that none of them survives it.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { expect } from 'vitest';

/** Every descendant of `pid` right now (children, grandchildren, …), from ps. */
export function descendants(pid: number): number[] {
  const table = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number));
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const parent = queue.shift() as number;
    for (const [child, ppid] of table) {
      if (ppid === parent && !found.includes(child)) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** True when nothing accepts connections at `url` any more. */
async function refused(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2000) });
    return false;
  } catch {
    return true;
  }
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  /** stderr alone. */
  err: string;
  /** Every process seen below the command while it ran. */
  pids: number[];
  /** Base URLs it printed (mock provider, agent replicas, Prometheus). */
  urls: string[];
}

/** Children started by runCommand, killed by killStarted (afterAll). */
const started: ChildProcess[] = [];

export function killStarted(): void {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/** Runs `quotascope <command> <args>`; `whileRunning` may act on it (e.g. signal it). */
export function runCommand(command: string, args: string[], whileRunning?: (child: ChildProcess, out: () => string) => void): Promise<Run> {
  const child = spawn(process.execPath, ['cli/quotascope.ts', command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
    err += d;
  });
  const pids = new Set<number>();
  const watch = setInterval(() => {
    if (child.pid) for (const p of descendants(child.pid)) pids.add(p);
    whileRunning?.(child, () => out);
  }, 250);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      clearInterval(watch);
      const urls = [...out.matchAll(/http:\/\/127\.0\.0\.1:\d+/g)].map((m) => m[0]);
      resolve({ code, signal, out, err, pids: [...pids], urls: [...new Set(urls)] });
    });
  });
}

/** `npm start` with `args`. */
export const npmStart = (args: string[], whileRunning?: (child: ChildProcess, out: () => string) => void): Promise<Run> =>
  runCommand('start', args, whileRunning);

/** Nothing the run started is alive, nor answers at a URL it printed. */
export async function expectNothingLeft(run: Run, least = { processes: 4, urls: 4 }): Promise<void> {
  // mock provider, agent, prometheus and k6 at least
  expect(run.pids.length, 'processes seen while it ran').toBeGreaterThanOrEqual(least.processes);
  await new Promise((r) => setTimeout(r, 200)); // let the kernel reap the last exits
  expect(run.pids.filter(alive), 'processes still alive after the run exited').toEqual([]);
  expect(run.urls.length, 'URLs printed').toBeGreaterThanOrEqual(least.urls);
  for (const url of run.urls) expect(await refused(url), `${url} still answers`).toBe(true);
}
