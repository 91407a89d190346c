// The redis-server a local run starts for quota sharing "central": loopback only, a free port,
// nothing persisted (its own temp dir), a child of the run's process group so it stops with
// the run. Ready once it answers PING.
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type ProcessGroup } from './processes.ts';
import { requireTool } from './tools.ts';

/** How long a started redis-server may take to answer PING, ms. */
const READY_TIMEOUT_MS = 15_000;
const PING_INTERVAL_MS = 100;

/** Starts redis-server in `group` on a free loopback port; resolves with its URL once it answers. */
export async function startLocalRedis(group: ProcessGroup): Promise<string> {
  const binary = requireTool('redis-server');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'quotascope-redis-'));
  group.start('redis-server', binary, ['--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'yes', '--save', '', '--appendonly', 'no', '--dir', dir]);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await answersPing(port))) {
    group.assertRunning();
    if (Date.now() > deadline) throw new Error(`redis-server on 127.0.0.1:${port} did not answer PING within ${READY_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, PING_INTERVAL_MS));
  }
  return `redis://127.0.0.1:${port}`;
}

/** One PING over a fresh connection: true on +PONG. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}
