// Setup of the unit tier (vitest.config.ts): a unit test starts no sockets and no processes.
// Starting a server, opening a connection or spawning a process throws, and the file fails
// even when the code under test catches that error; such a file is listed under
// integration or e2e in vitest.config.ts.
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import { afterAll, expect } from 'vitest';

const refused: string[] = [];

function refuse(what: string): never {
  refused.push(what);
  throw new Error(`unit tier: this test ${what}; list its file under integration or e2e in vitest.config.ts`);
}

for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
  Object.assign(childProcess, { [name]: () => refuse(`starts a process (child_process.${name})`) });
}
net.Server.prototype.listen = () => refuse('listens on a socket');
net.Socket.prototype.connect = () => refuse('opens a connection');
syncBuiltinESMExports();

afterAll(() => {
  expect(refused, 'sockets or processes started in the unit tier').toEqual([]);
});
