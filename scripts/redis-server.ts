// A real redis-server for tests and benchmarks: an ephemeral loopback port, no persistence, its own temp
// dir; stop() kills it and waits for the exit. restart() brings it back on the same port
// (to test recovery after an outage); pause() and resume() stop and continue the process
// (SIGSTOP / SIGCONT: a hung Redis whose connections stay open).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../loadtest/stack/processes.ts';
import { requireTool } from '../loadtest/stack/tools.ts';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Kill the server (SIGKILL: an abrupt outage) and wait for it to exit. */
  stop(): Promise<void>;
  /** Start it again on the same port (empty: nothing is persisted). */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Stop and remove the temp dir. */
  close(): Promise<void>;
}

function spawnRedis(binary: string, port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server did not start on port ${port}: ${output}`));
    }, 10_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code} on port ${port}: ${output}`));
    });
  });
}

export async function startRedisServer(): Promise<RedisServer> {
  const binary = requireTool('redis-server');
  const dir = mkdtempSync(join(tmpdir(), 'qs-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;
  for (let attempt = 0; attempt < 3 && !child; attempt++) {
    port = await freePort();
    child = await spawnRedis(binary, port, dir).catch(() => undefined); // the port may have been taken meanwhile
  }
  if (!child) throw new Error('redis-server could not be started on a free port');
  let current: ChildProcess | undefined = child;
  const stop = async () => {
    if (!current || current.exitCode !== null) return;
    const exited = once(current, 'exit');
    current.kill('SIGKILL');
    await exited;
    current = undefined;
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    pause() {
      current?.kill('SIGSTOP');
    },
    resume() {
      current?.kill('SIGCONT');
    },
    async restart() {
      await stop();
      current = await spawnRedis(binary, port, dir);
    },
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
