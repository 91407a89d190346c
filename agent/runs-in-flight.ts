// The runs an agent app has in flight: each one's abort controller (a client that goes away
// aborts its run; so does the app's close) and its handler's promise, so close can let the
// runs finish and then wait for the aborted ones to answer and log.

/** The abort reason of a run that the app's close() ended after its grace period. */
export class ServiceClosing extends Error {
  override name = 'ServiceClosing';
}

/** Whether a run's abort means its client went away (at the door or mid-run), not the app's close. */
export function clientLeft(signal: AbortSignal): boolean {
  return signal.aborted && !(signal.reason instanceof ServiceClosing);
}

/** The answer side of a run: its 'close' event before the answer finished means the client went away. */
interface Answer {
  readonly writableFinished: boolean;
  on(event: 'close', listener: () => void): unknown;
}

export class RunsInFlight {
  readonly #aborts = new Set<AbortController>();
  readonly #runs = new Set<Promise<void>>();

  /**
   * The abort signal of a run answered on `answer`. A client that goes away aborts the run:
   * the wrapper gets the signal and the provider sees its connections close, so no permit
   * is held for nobody. end() it when the run finished.
   */
  begin(answer: Answer): AbortController {
    const abort = new AbortController();
    this.#aborts.add(abort);
    answer.on('close', () => {
      if (!answer.writableFinished) abort.abort(new Error('client disconnected'));
    });
    return abort;
  }

  /** The run is over: close() no longer aborts it. */
  end(abort: AbortController): void {
    this.#aborts.delete(abort);
  }

  /** Waits for `handler`, tracked until it settles so close() can wait for it to write its log line. */
  async track<T>(handler: Promise<T>): Promise<T> {
    const settled = handler.then(
      () => {},
      () => {},
    );
    this.#runs.add(settled);
    try {
      return await handler;
    } finally {
      this.#runs.delete(settled);
    }
  }

  /** Resolves when every tracked run settled or after `ms`, whichever comes first. */
  async settledWithin(ms: number): Promise<void> {
    if (this.#runs.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    await Promise.race([Promise.all(this.#runs), deadline]);
    clearTimeout(timer);
  }

  /** Aborts every run still going with ServiceClosing (the native run answers 503). */
  abortAll(reason: string): void {
    for (const abort of this.#aborts) abort.abort(new ServiceClosing(reason));
  }
}
