// Child processes that a run starts (mock provider, agent service, Prometheus): each logs
// to a file in the report folder; a run stops all of them when it ends, and on Ctrl-C or
// SIGTERM through run-shutdown.ts (the one place for signals).
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { join } from 'node:path';

export class ProcessGroup {
  readonly children: { name: string; child: ChildProcess }[] = [];
  private readonly logDir: string;
  constructor(logDir: string) {
    this.logDir = logDir;
  }

  start(name: string, command: string, args: string[], env: Record<string, string> = {}): ChildProcess {
    const log = createWriteStream(join(this.logDir, `${name}.log`));
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    child.on('error', (e) => log.write(`spawn error: ${e.message}\n`));
    this.children.push({ name, child });
    return child;
  }

  /** Fails when a child has already exited (it crashed at start). */
  assertRunning(): void {
    for (const { name, child } of this.children) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`${name} exited early (code ${child.exitCode ?? child.signalCode}); see ${join(this.logDir, `${name}.log`)}`);
      }
    }
  }

  /** SIGTERM every child, SIGKILL what is still alive after `graceMs`. */
  async stopAll(graceMs = 5000): Promise<void> {
    const alive = this.children.filter(({ child }) => child.exitCode === null && child.signalCode === null);
    await Promise.all(
      alive.reverse().map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
  }
}

/** Listens on `port` of loopback (0: any); resolves with the server, or undefined when the port is taken. */
function tryListen(port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error)));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

const closeAll = (servers: Server[]) => Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));

/**
 * The first of `count` consecutive TCP ports free on loopback right now (for tools that cannot
 * report an ephemeral port; the agent service's replicas take consecutive ports). Each port is
 * held until all are found, so none of them is one this process picked twice.
 */
export async function freePort(count = 1): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const first = await tryListen(0);
    if (!first) continue;
    const held = [first];
    const base = (first.address() as AddressInfo).port;
    for (let i = 1; i < count; i++) {
      const next = base + i <= 65_535 ? await tryListen(base + i) : undefined;
      if (!next) break;
      held.push(next);
    }
    await closeAll(held);
    if (held.length === count) return base;
  }
  throw new Error(`no ${count} consecutive free ports on 127.0.0.1`);
}

/** Polls `url` until it answers 2xx, or fails after `timeoutMs` naming what did not come up. */
export async function waitForHealthy(name: string, url: string, timeoutMs = 30_000, check?: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    check?.();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} did not become healthy at ${url} within ${timeoutMs} ms (${last})`);
}
