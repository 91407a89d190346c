// One sweep step's user requests as k6 saw them, from k6's JSON output (one sample a line):
// each request starts with a qs_requests_started sample and ends with qs_request_duration
// and qs_request_outcome, the three paired by the VU and iteration (k6's `vu` and `iter`
// system tags, which the step turns on; k6 2.x writes them as the sample's metadata). Pure:
// the file's text in, the requests out.
import { percentile } from '../drive/node-driver.ts';
import { REQUEST_OUTCOME_METRIC, REQUEST_OUTCOMES, REQUESTS_STARTED_METRIC, type RequestOutcome } from '../k6/request-status.ts';

const DURATION_METRIC = 'qs_request_duration';

/** k6's system tags for a step: its defaults plus `vu` and `iter`, so a request's samples pair up. */
export const STEP_SYSTEM_TAGS = 'proto,subproto,status,method,url,name,group,check,error,error_code,tls_version,scenario,service,expected_response,vu,iter';

export interface StepRequest {
  /** When it started, epoch ms. */
  startedAt: number;
  /** How it ended; undefined when the step's end cut it off. */
  outcome: RequestOutcome | undefined;
  /** Client-side duration, ms, when it ended. */
  durationMs: number | undefined;
}

interface Point {
  type?: string;
  metric?: string;
  data?: { time?: string; value?: number; tags?: Record<string, string>; metadata?: Record<string, string> };
}

/** The requests in k6's JSON output `text` (lines that are not a request's samples are skipped). */
export function stepRequests(text: string): StepRequest[] {
  const byIteration = new Map<string, StepRequest>();
  const of = (key: string) => {
    let r = byIteration.get(key);
    if (!r) {
      r = { startedAt: Number.NaN, outcome: undefined, durationMs: undefined };
      byIteration.set(key, r);
    }
    return r;
  };
  for (const line of text.split('\n')) {
    if (!line.includes('"Point"') || !line.includes('"qs_')) continue;
    let p: Point;
    try {
      p = JSON.parse(line) as Point;
    } catch {
      continue;
    }
    const tags = p.data?.tags ?? {};
    // k6 2.x writes vu and iter as metadata; older k6 as tags.
    const vu = p.data?.metadata?.vu ?? tags.vu;
    const iter = p.data?.metadata?.iter ?? tags.iter;
    if (p.type !== 'Point' || vu === undefined || iter === undefined || !p.data?.time) continue;
    const key = `${tags.scenario ?? ''}/${vu}/${iter}`;
    if (p.metric === REQUESTS_STARTED_METRIC) of(key).startedAt = Date.parse(p.data.time);
    else if (p.metric === DURATION_METRIC) of(key).durationMs = Number(p.data.value);
    else if (p.metric === REQUEST_OUTCOME_METRIC && (REQUEST_OUTCOMES as readonly string[]).includes(tags.outcome ?? '')) of(key).outcome = tags.outcome as RequestOutcome;
  }
  return [...byIteration.values()].filter((r) => Number.isFinite(r.startedAt));
}

/** The step's figures over the requests that started in [from, to) (epoch ms). */
export interface RequestFigures {
  started: number;
  served: number;
  partial: number;
  shed: number;
  failed: number;
  unfinished: number;
  /** Per minute: the offered rate × the share of the window's requests served (shed); the window's own count when no rate is given. */
  servedPerMinute: number;
  shedPerMinute: number;
  /** Shares of the started requests, percent. */
  partialPercent: number;
  /** Not served whole nor partial: shed, failed or cut off. */
  lostPercent: number;
  /** p95 of the served requests' durations, s (nearest rank); undefined when none was served. */
  servedP95Seconds: number | undefined;
}

/**
 * The figures of the requests that started in [from, to). Given the offered rate, per-minute
 * figures are that rate × the share served (shed): a constant-rate window holds the rate's
 * count ±1 arrival by its phase, and the share does not carry that ±1.
 */
export function requestFigures(requests: readonly StepRequest[], from: number, to: number, offeredPerMinute?: number): RequestFigures {
  const inWindow = requests.filter((r) => r.startedAt >= from && r.startedAt < to);
  const count = (o: RequestOutcome | undefined) => inWindow.filter((r) => r.outcome === o).length;
  const started = inWindow.length;
  const [served, partial, shed, failed, unfinished] = [count('served'), count('partial'), count('shed'), count('failed'), count(undefined)];
  const minutes = Math.max(1e-9, (to - from) / 60_000);
  const percent = (n: number) => (started === 0 ? 0 : (n / started) * 100);
  const perMinute = (n: number) => (offeredPerMinute === undefined ? n / minutes : started === 0 ? 0 : (offeredPerMinute * n) / started);
  const durations = inWindow.filter((r) => r.outcome === 'served' && r.durationMs !== undefined).map((r) => r.durationMs as number);
  return {
    started,
    served,
    partial,
    shed,
    failed,
    unfinished,
    servedPerMinute: perMinute(served),
    shedPerMinute: perMinute(shed),
    partialPercent: percent(partial),
    lostPercent: percent(shed + failed + unfinished),
    servedP95Seconds: durations.length === 0 ? undefined : percentile(durations.sort((a, b) => a - b), 0.95) / 1000,
  };
}
