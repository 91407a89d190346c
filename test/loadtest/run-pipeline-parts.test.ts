// The run pipeline's one run id and its one signal handling (loadtest/run-id.ts,
// loadtest/run-shutdown.ts): ids are file-name safe and sort as their start times do; the
// first signal aborts the run, stops the processes and exits 130 once the run has wound
// down; a second signal exits at once.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runIdFor } from '../../loadtest/run-id.ts';
import { STOPPED_EXIT_CODE } from '../../shared/stop-signals.ts';
import { runShutdown } from '../../loadtest/run-shutdown.ts';
import type { ProcessGroup } from '../../loadtest/stack/processes.ts';

const instant = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true });
const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);

describe('runIdFor', () => {
  it('is file-name safe, ends with the scenario name and sorts as the start times do (property)', () => {
    fc.assert(
      fc.property(instant, instant, name, (a, b, scenario) => {
        const [idA, idB] = [runIdFor(scenario, a), runIdFor(scenario, b)];
        expect(idA).not.toMatch(/[:./\\\s]/);
        expect(idA.endsWith(`-${scenario}`)).toBe(true);
        expect(Math.sign(idA < idB ? -1 : idA > idB ? 1 : 0)).toBe(Math.sign(a.getTime() - b.getTime()));
      }),
    );
  });
});

/** The handler runShutdown installed for `sig` (called directly: the test runner has its own). */
function installedHandler(before: readonly unknown[], sig: NodeJS.Signals): (sig: NodeJS.Signals) => void {
  const added = process.listeners(sig).filter((l) => !before.includes(l));
  expect(added).toHaveLength(1);
  return added[0] as (sig: NodeJS.Signals) => void;
}

describe('runShutdown', () => {
  afterEach(() => vi.restoreAllMocks());

  it('a signal aborts the run, stops the processes, waits for the run and exits 130; close removes the handlers', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const stopAll = vi.fn(async () => {});
    const said: string[] = [];
    const before = { SIGINT: process.listeners('SIGINT'), SIGTERM: process.listeners('SIGTERM') };
    const shutdown = runShutdown({ stopAll } as unknown as ProcessGroup, (line) => said.push(line));
    const onTerm = installedHandler(before.SIGTERM, 'SIGTERM');
    installedHandler(before.SIGINT, 'SIGINT');
    let finish = () => {};
    shutdown.track(new Promise<void>((resolve) => (finish = resolve)));

    onTerm('SIGTERM');
    expect(shutdown.signal.aborted).toBe(true);
    expect(said).toEqual(['SIGTERM: stopping the run and every process it started…']);
    expect(stopAll).toHaveBeenCalledTimes(1);
    await new Promise((r) => setImmediate(r));
    expect(exit).not.toHaveBeenCalled(); // the run has not wound down yet
    finish();
    await vi.waitFor(() => expect(exit).toHaveBeenCalledWith(STOPPED_EXIT_CODE));

    await shutdown.close();
    expect(process.listeners('SIGTERM')).toEqual(before.SIGTERM);
    expect(process.listeners('SIGINT')).toEqual(before.SIGINT);
  });

  it('a second signal exits at once', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const before = process.listeners('SIGINT');
    const shutdown = runShutdown({ stopAll: async () => {} } as unknown as ProcessGroup, () => {});
    shutdown.track(new Promise(() => {})); // a run that never winds down
    const onInt = installedHandler(before, 'SIGINT');
    onInt('SIGINT');
    expect(exit).not.toHaveBeenCalled();
    onInt('SIGINT');
    expect(exit).toHaveBeenCalledWith(STOPPED_EXIT_CODE);
    await shutdown.close();
  });
});
