// The one place a run (start, loadtest) handles Ctrl-C and SIGTERM and stops what it
// started. The first signal aborts the run (k6 gets SIGINT, then SIGKILL after its grace),
// stops every child process, waits until the run has wound down (at most WIND_DOWN_MS) and
// exits 130; a second signal exits at once (the children have been signalled already).
import { STOP_SIGNALS, STOPPED_EXIT_CODE } from '../shared/stop-signals.ts';
import type { ProcessGroup } from './stack/processes.ts';

/** How long a stopped run may take to wind down before the process exits anyway. */
const WIND_DOWN_MS = 15_000;

export interface RunShutdown {
  /** Aborted by the first signal. */
  readonly signal: AbortSignal;
  /** The run to wait for after a signal, before the process exits. */
  track(run: Promise<unknown>): void;
  /** Stops every child process and removes the signal handlers (the run is over). */
  close(): Promise<void>;
  /**
   * Runs `run` as the tracked run, then closes; resolves to `stopped` when a signal aborted
   * the run and it threw.
   */
  runToEnd<T>(run: () => Promise<T>, stopped: T): Promise<T>;
}

/**
 * Installs the run's signal handlers. `say` gets the one line said when a signal comes;
 * `group` holds the child processes to stop.
 */
export function runShutdown(group: ProcessGroup, say: (line: string) => void): RunShutdown {
  const aborter = new AbortController();
  let running: Promise<unknown> = Promise.resolve();
  const onSignal = (sig: NodeJS.Signals) => {
    if (aborter.signal.aborted) process.exit(STOPPED_EXIT_CODE);
    say(`${sig}: stopping the run and every process it started…`);
    aborter.abort();
    const deadline = new Promise((resolve) => setTimeout(resolve, WIND_DOWN_MS).unref());
    void Promise.all([group.stopAll(), Promise.race([running.catch(() => {}), deadline])]).then(() => process.exit(STOPPED_EXIT_CODE));
  };
  for (const sig of STOP_SIGNALS) process.on(sig, onSignal);
  const shutdown: RunShutdown = {
    signal: aborter.signal,
    track(run) {
      running = run;
    },
    async close() {
      await group.stopAll();
      for (const sig of STOP_SIGNALS) process.off(sig, onSignal);
    },
    async runToEnd(run, stopped) {
      const ran = run().catch((error: unknown) => {
        if (aborter.signal.aborted) return stopped;
        throw error;
      });
      shutdown.track(ran);
      try {
        return await ran;
      } finally {
        await shutdown.close();
      }
    },
  };
  return shutdown;
}
