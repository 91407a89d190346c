// Preloaded (node --expose-gc --import) into a process the soak drives: on the IPC message
// "heap" it collects garbage until the heap stops shrinking and answers the bytes its objects
// use (V8's heap spaces less the code spaces: compiled code grows as the JIT warms up, and is
// not state any request left behind).
import { setImmediate as turn } from 'node:timers/promises';
import { getHeapSpaceStatistics } from 'node:v8';

const collect = globalThis.gc;
if (typeof collect !== 'function') throw new Error('heap-probe needs node --expose-gc');

const objectBytes = () =>
  getHeapSpaceStatistics()
    .filter((space) => !space.space_name.startsWith('code'))
    .reduce((sum, space) => sum + space.space_used_size, 0);

process.on('message', async (message) => {
  if (message !== 'heap') return;
  let before = Number.POSITIVE_INFINITY;
  let used = objectBytes();
  for (let i = 0; i < 10 && used < before; i++) {
    before = used;
    collect();
    await turn();
    used = objectBytes();
  }
  process.send?.({ heapUsed: used });
});
