// A run's progress on the console: in a terminal one line that updates in place, otherwise
// a plain line every 10 s. It shows the scenario's phase, elapsed / planned time, the user
// requests k6 completed, and, from Prometheus when there is one, the admitted calls'
// acquire p95 and the 429s and timeouts since the run started. k6's own per-second lines
// go to k6.log only.
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import { queryScalar } from '../measure/prometheus-client.ts';
import { arrivalLabel, arrivalSpans } from '../scenario/arrivals.ts';
import type { ScenarioFile } from '../scenario/types.ts';

/** What one of k6's `running (1m02.5s), 03/65 VUs, 11 complete and 0 interrupted iterations` lines says (`(10.9s)` under a minute). */
export interface K6Progress {
  elapsedSeconds: number;
  vus: number;
  complete: number;
  interrupted: number;
}

const RUNNING = /^running \((?:(\d+)h)?(?:(\d+)m)?([\d.]+)s\), (\d+)\/\d+ VUs, (\d+) complete and (\d+) interrupted iterations/;

export function parseK6Progress(line: string): K6Progress | undefined {
  const m = RUNNING.exec(line.trim());
  if (!m) return undefined;
  return {
    elapsedSeconds: Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3]),
    vus: Number(m[4]),
    complete: Number(m[5]),
    interrupted: Number(m[6]),
  };
}

/** Seconds from the scenario's start to its last request start. */
export function plannedSeconds(scenario: ScenarioFile): number {
  return Math.max(0, ...scenario.arrivals.flatMap((a) => arrivalSpans(a).map(([, to]) => to)));
}

/** What the scenario is doing `t` seconds in: the arrival sending then, the one it is past, or draining. */
export function phaseAt(scenario: ScenarioFile, t: number): string {
  const INSTANT_WIDTH = 1; // a span of one instant (a burst's) is named for a second
  let past: string | undefined;
  let pastStart = Number.NEGATIVE_INFINITY;
  for (const a of scenario.arrivals) {
    for (const [from, to] of arrivalSpans(a)) {
      if (t >= from && t <= Math.max(to, from + (to === from ? INSTANT_WIDTH : 0))) return arrivalLabel(a);
      if (to < t && from > pastStart) {
        past = arrivalLabel(a);
        pastStart = from;
      }
    }
  }
  if (t > plannedSeconds(scenario)) return 'draining';
  return past ? `after ${past}` : 'waiting';
}

const clock = (s: number): string => {
  const whole = Math.max(0, Math.floor(s));
  return whole >= 60 ? `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s` : `${whole}s`;
};

export interface LimiterFigures {
  acquireP95Seconds?: number;
  rateLimited?: number;
  timeouts?: number;
}

/** The progress line: phase, elapsed / planned, requests, acquire p95, 429s, timeouts. */
export function progressLine(scenario: ScenarioFile, k6: K6Progress | undefined, figures: LimiterFigures | undefined): string {
  const elapsed = k6?.elapsedSeconds ?? 0;
  const parts = [
    k6 ? phaseAt(scenario, elapsed) : 'starting',
    `${clock(elapsed)} of ${clock(plannedSeconds(scenario))}`,
    `${k6?.complete ?? 0} requests`,
  ];
  if (figures) {
    const p95 = figures.acquireP95Seconds;
    parts.push(`acquire p95 ${p95 === undefined ? '-' : p95 < 1 ? `${Math.round(p95 * 1000)} ms` : `${p95.toFixed(2)} s`}`);
    parts.push(`429s ${figures.rateLimited ?? 0}`, `timeouts ${figures.timeouts ?? 0}`);
  }
  return `[run] ${parts.join(' · ')}`;
}

export interface RunProgressOptions {
  scenario: ScenarioFile;
  /** The Prometheus that scrapes the agent service; without it the line has k6's figures only. */
  prometheusUrl?: string;
  /** Where the line goes (default process.stdout). */
  out?: NodeJS.WriteStream;
  /** Updating line (default: out.isTTY) or a plain line every `plainEveryMs`. */
  tty?: boolean;
  plainEveryMs?: number;
}

/** Window of the live acquire p95: recent admissions only. */
const ACQUIRE_WINDOW = '30s';

export class RunProgress {
  readonly #options: Required<Omit<RunProgressOptions, 'prometheusUrl'>> & { prometheusUrl?: string };
  #k6: K6Progress | undefined;
  #figures: LimiterFigures | undefined;
  #baseline: { rateLimited: number; timeouts: number } | undefined;
  #timer: NodeJS.Timeout | undefined;
  #drawn = false;
  #ticking = false;

  constructor(options: RunProgressOptions) {
    const out = options.out ?? process.stdout;
    this.#options = { plainEveryMs: 10_000, ...options, out, tty: options.tty ?? out.isTTY === true };
  }

  /** Starts updating (a terminal every second, else every plainEveryMs). */
  async start(): Promise<void> {
    if (this.#options.prometheusUrl) this.#baseline = await this.#counters().catch(() => undefined);
    this.#timer = setInterval(() => void this.#tick(), this.#options.tty ? 1000 : this.#options.plainEveryMs);
    this.#timer.unref();
  }

  /** k6 printed a progress line. */
  update(progress: K6Progress): void {
    this.#k6 = progress;
  }

  /** A line that is not progress (k6's summary, a warning): printed above the updating line. */
  log(line: string): void {
    this.#clear();
    this.#options.out.write(`${line}\n`);
    if (this.#options.tty && this.#drawn) this.#draw();
  }

  /** Stops, leaving the last figures as a plain line. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#refresh();
    this.#clear();
    this.#options.out.write(`${progressLine(this.#options.scenario, this.#k6, this.#figures)}\n`);
  }

  async #counters(): Promise<{ rateLimited: number; timeouts: number }> {
    const url = this.#options.prometheusUrl as string;
    return {
      rateLimited: (await queryScalar(url, `sum(${limiterMetrics.rateLimited.name})`)) ?? 0,
      timeouts: (await queryScalar(url, `sum(${limiterMetrics.timeouts.name})`)) ?? 0,
    };
  }

  async #refresh(): Promise<void> {
    const url = this.#options.prometheusUrl;
    if (!url) return;
    try {
      const now = await this.#counters();
      const base = this.#baseline ?? { rateLimited: 0, timeouts: 0 };
      const acquired = `${limiterMetrics.acquireDuration.name}_bucket{outcome="acquired"}`;
      this.#figures = {
        acquireP95Seconds: await queryScalar(url, `histogram_quantile(0.95, sum by (le) (rate(${acquired}[${ACQUIRE_WINDOW}])))`),
        rateLimited: Math.max(0, now.rateLimited - base.rateLimited),
        timeouts: Math.max(0, now.timeouts - base.timeouts),
      };
    } catch {
      // Prometheus busy or gone: keep the last figures.
    }
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      await this.#refresh();
      if (!this.#timer) return; // stopped meanwhile
      if (this.#options.tty) this.#draw();
      else this.#options.out.write(`${progressLine(this.#options.scenario, this.#k6, this.#figures)}\n`);
    } finally {
      this.#ticking = false;
    }
  }

  #draw(): void {
    const columns = this.#options.out.columns ?? 120;
    this.#options.out.write(`\r\x1b[2K${progressLine(this.#options.scenario, this.#k6, this.#figures).slice(0, Math.max(20, columns - 1))}`);
    this.#drawn = true;
  }

  #clear(): void {
    if (this.#options.tty && this.#drawn) this.#options.out.write('\r\x1b[2K');
    this.#drawn = false;
  }
}
