// The JSON-lines access log: one line per finished run request, in the shape
// loadtest/scenario/trace-convert.ts turns into a replayable trace (`npm run loadtest --
// convert-trace`). A line says when the request ARRIVED (`time`; lines are written when
// requests finish, so they are not in arrival order: the converter sorts), which tree it
// ran, how big the document was and how it went. Never the document, the user or a key.
import { createWriteStream, openSync, type WriteStream } from 'node:fs';

/** One access-log line. */
export interface AccessLogRecord {
  /** ISO time the request arrived. */
  time: string;
  /** The tree that ran. Absent on requests rejected before a run (the converter skips those). */
  tree?: string;
  /** Length of the document (the limiter counts ceil(chars / 4) input tokens). */
  documentChars?: number;
  trafficClass?: 'interactive' | 'batch';
  /** `wide`: branches in flight at once (k); null for the other trees. */
  width?: number | null;
  /** `wide`: number of branches (N). */
  branches?: number;
  /** HTTP status answered (499 = the client went away). */
  status: number;
  /** Arrival to answer, queueing included. */
  durationMs: number;
  modelCalls?: number;
  missingBranches?: string[];
  permitWaitMs?: number;
  tokens?: { reserved: number; actual: number };
  /** Rejected requests only (no tree ran): the request path, for 400/404/413 lines. */
  path?: string;
}

/** When a request arrived: the wall clock for `time`, the monotonic clock for its duration. */
export interface Arrival {
  wallMs: number;
  monoMs: number;
}

export function arrivalNow(): Arrival {
  return { wallMs: Date.now(), monoMs: performance.now() };
}

/** The `time` and `durationMs` of a request finishing now. */
export function sinceArrival(arrival: Arrival): Pick<AccessLogRecord, 'time' | 'durationMs'> {
  return { time: new Date(arrival.wallMs).toISOString(), durationMs: Math.round(performance.now() - arrival.monoMs) };
}

export interface AccessLog {
  /** The file path, or `-` for stdout. */
  readonly target: string;
  /** Appends one line; never throws (a failed log reports once on stderr and goes quiet). */
  write(record: AccessLogRecord): void;
  /** Flushes and closes the file (stdout stays open). */
  close(): Promise<void>;
}

export class AccessLogError extends Error {
  override name = 'AccessLogError';
}

/**
 * Opens `target` for appending (created if missing) or stdout for `-`. Opening is
 * synchronous so a bad path fails here, at startup, with a message naming it.
 */
export function openAccessLog(target: string): AccessLog {
  if (target === '-') {
    return {
      target,
      write(record) {
        process.stdout.write(`${JSON.stringify(record)}\n`);
      },
      async close() {},
    };
  }

  let fd: number;
  try {
    fd = openSync(target, 'a');
  } catch (error) {
    throw new AccessLogError(`cannot open access log "${target}" for appending: ${(error as Error).message}`);
  }
  const stream: WriteStream = createWriteStream(target, { fd, flags: 'a' });
  let failed = false;
  // A write error later on (disk full, file system gone) must not take the service down.
  stream.on('error', (error) => {
    if (failed) return;
    failed = true;
    console.error(`agent: access log "${target}" failed, no further lines are written: ${error.message}`);
  });
  return {
    target,
    write(record) {
      // A line of a run that outlived close() is dropped rather than written after the end.
      if (!failed && !stream.writableEnded) stream.write(`${JSON.stringify(record)}\n`);
    },
    close() {
      if (failed || stream.closed) return Promise.resolve();
      return new Promise<void>((resolve) => {
        stream.once('close', () => resolve());
        stream.end();
      });
    },
  };
}
