// The signals that stop a quotascope process, and how a server answers them: the first one
// runs its stop (close the listeners, flush what it keeps) and exits 0, or 1 when the stop
// fails; a second one exits at once. A run handles them in loadtest/run-shutdown.ts.

export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** Exit code of a process stopped by a second signal (128 + SIGINT's 2, as shells report it). */
export const STOPPED_EXIT_CODE = 130;

/** Runs `stop` on the first SIGINT or SIGTERM, then exits; a second signal exits at once. */
export function stopOnSignal(stop: (signal: StopSignal) => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: StopSignal) => {
    if (stopping) process.exit(STOPPED_EXIT_CODE);
    stopping = true;
    stop(signal).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
}
