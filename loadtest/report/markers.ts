// The incident on the report: the first provider 429, the first request shed at the door and
// every change of the mock provider's quota, found in the series run-queries.ts's
// markerQueries read from Prometheus, marked on every chart and on the alerts timeline.
import type { Series } from '../measure/prometheus-client.ts';
import type { QuotaChangeIn } from './quota-cuts.ts';

export type MarkerKind = 'first-429' | 'first-shed' | 'quota-change';

export interface Marker {
  kind: MarkerKind;
  /** Epoch ms: the first scrape that saw it. */
  at: number;
  label: string;
}

/** One change of one of the mock provider's quotas (its `quota` label). */
export interface QuotaChange {
  /** Epoch ms: the first scrape that saw the new limit. */
  at: number;
  quota: string;
  from: number;
  to: number;
}

/**
 * The first time a counter rose in [from, to], over its series: a rise between two points, or
 * a series born inside the range above 0 (a counter is born at 1 on its first event, and it
 * was 0 before). A series already above 0 at the start of the range counted earlier events,
 * not a rise. Returns the time and the series.
 */
export function firstRise(series: readonly Series[], from: number, stepMs: number): { at: number; series: Series } | undefined {
  let best: { at: number; series: Series } | undefined;
  for (const s of series) {
    const [first] = s.points;
    if (!first) continue;
    let at: number | undefined;
    if (first[1] > 0 && first[0] > from + stepMs) at = first[0];
    else {
      for (let i = 1; i < s.points.length && at === undefined; i++) if (s.points[i][1] > s.points[i - 1][1]) at = s.points[i][0];
    }
    if (at !== undefined && (!best || at < best.at)) best = { at, series: s };
  }
  return best;
}

/** Every change of each quota's limit, in time order (a quota turned off or on is not a change of its limit). */
export function quotaChanges(series: readonly Series[]): QuotaChange[] {
  const changes: QuotaChange[] = [];
  for (const s of series) {
    const quota = s.metric.quota ?? 'quota';
    for (let i = 1; i < s.points.length; i++) {
      const [, before] = s.points[i - 1];
      const [at, after] = s.points[i];
      if (after !== before) changes.push({ at, quota, from: before, to: after });
    }
  }
  return changes.sort((a, b) => a.at - b.at || a.quota.localeCompare(b.quota));
}

/** The changes as the verdict takes them: seconds since `from` (epoch ms). */
export function quotaChangesSince(changes: readonly QuotaChange[], from: number): QuotaChangeIn[] {
  return changes.map((c) => ({ secondsIn: (c.at - from) / 1000, quota: c.quota, from: c.from, to: c.to }));
}

/** A quota limit as the report writes it: `1,000,000`. */
export const quotaAmount = (n: number): string => n.toLocaleString('en-US');
/** `tokens_per_minute` → `tokens/min`. */
export const quotaName = (quota: string): string => quota.replace(/_per_minute$/, '/min').replaceAll('_', ' ');

/** `tokens/min quota 1,000,000 → 500,000`. */
export function quotaChangeLabel(c: QuotaChange): string {
  return `${quotaName(c.quota)} quota ${quotaAmount(c.from)} → ${quotaAmount(c.to)}`;
}

/** The markers of [from, to], in time order: first 429 (with its reason), first shed, each quota change. */
export function markersOf(input: { rateLimited: readonly Series[]; shed: readonly Series[]; quotaLimits: readonly Series[]; from: number; stepMs: number }): Marker[] {
  const markers: Marker[] = [];
  const first429 = firstRise(input.rateLimited, input.from, input.stepMs);
  if (first429) {
    const reason = first429.series.metric.reason;
    markers.push({ kind: 'first-429', at: first429.at, label: `first 429${reason ? ` (${reason === 'random' ? 'shared capacity' : reason})` : ''}` });
  }
  const firstShed = firstRise(input.shed, input.from, input.stepMs);
  if (firstShed) markers.push({ kind: 'first-shed', at: firstShed.at, label: 'first shed' });
  for (const c of quotaChanges(input.quotaLimits)) markers.push({ kind: 'quota-change', at: c.at, label: quotaChangeLabel(c) });
  return markers.sort((a, b) => a.at - b.at);
}
