// The incident on the report: first 429, first shed and the mock's quota changes as markers
// (a counter born at 1 counts at its birth), the alerts table with one row per alert and
// label set however it flickered, and the verdict's line about a quota cut mid-run.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { alertRows } from '../../loadtest/report/alert-rows.ts';
import type { AlertSpan } from '../../loadtest/report/collect.ts';
import { firstRise, markersOf, quotaChanges } from '../../loadtest/report/markers.ts';
import { type ReportData, renderReport } from '../../loadtest/report/page.ts';
import { quotaCutsLine } from '../../loadtest/report/quota-cuts.ts';
import { runVerdict } from '../../loadtest/report/verdict.ts';
import type { Series } from '../../loadtest/measure/prometheus-client.ts';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const STEP = 5000;
/** A series sampled every 5 s from `startIndex`, with these values. */
const series = (metric: Record<string, string>, startIndex: number, values: number[]): Series => ({
  metric,
  points: values.map((v, i) => [T0 + (startIndex + i) * STEP, v] as [number, number]),
});

describe('incident markers', () => {
  it('a counter born at 1 inside the range rises at its first sample; one already counting at the start rises at its next increase', () => {
    const born = series({ reason: 'tokens_per_minute' }, 24, [1, 1, 1]);
    expect(firstRise([born], T0, STEP)?.at).toBe(T0 + 24 * STEP);
    const old = series({ reason: 'random' }, 0, [3, 3, 3, 4, 4]);
    expect(firstRise([old], T0, STEP)?.at).toBe(T0 + 3 * STEP);
    expect(firstRise([old, born], T0, STEP)?.series).toBe(old);
    expect(firstRise([series({}, 0, [2, 2, 2])], T0, STEP)).toBeUndefined();
    expect(firstRise([series({}, 10, [0, 0, 0])], T0, STEP)).toBeUndefined();
  });

  it('property: the first rise is the earliest sample where some series first counts an event in the range', () => {
    const counter = fc.record({ start: fc.integer({ min: 0, max: 40 }), increments: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 30 }), base: fc.integer({ min: 0, max: 5 }) });
    fc.assert(
      fc.property(fc.array(counter, { minLength: 1, maxLength: 4 }), (counters) => {
        const all = counters.map((c, k) => {
          const values = [c.base];
          for (const inc of c.increments.slice(1)) values.push(values[values.length - 1] + inc);
          return series({ k: String(k) }, c.start, values);
        });
        // Expected, point by point: a birth above 0 after the first step, or a rise.
        const times = all.flatMap((s, k) =>
          s.points.filter(([, v], i) => (i === 0 ? v > 0 && counters[k].start > 1 : v > s.points[i - 1][1])).map(([t]) => t),
        );
        const got = firstRise(all, T0, STEP)?.at;
        expect(got).toBe(times.length ? Math.min(...times) : undefined);
      }),
    );
  });

  it('lists every quota change and labels the markers in time order', () => {
    const tokens = series({ quota: 'tokens_per_minute' }, 0, [1e6, 1e6, 4e5, 4e5, 1e6]);
    const requests = series({ quota: 'requests_per_minute' }, 0, [1000, 1000, 1000, 1000, 1000]);
    expect(quotaChanges([tokens, requests])).toEqual([
      { at: T0 + 2 * STEP, quota: 'tokens_per_minute', from: 1e6, to: 4e5 },
      { at: T0 + 4 * STEP, quota: 'tokens_per_minute', from: 4e5, to: 1e6 },
    ]);
    const markers = markersOf({
      rateLimited: [series({ api: 'gemini', reason: 'tokens_per_minute' }, 3, [1, 2])],
      shed: [series({ outcome: 'shed' }, 1, [0, 0, 0, 1])],
      quotaLimits: [tokens, requests],
      from: T0,
      stepMs: STEP,
    });
    expect(markers.map((m) => [m.kind, (m.at - T0) / STEP, m.label])).toEqual([
      ['quota-change', 2, 'tokens/min quota 1,000,000 → 400,000'],
      ['first-429', 3, 'first 429 (tokens_per_minute)'],
      ['first-shed', 4, 'first shed'],
      ['quota-change', 4, 'tokens/min quota 400,000 → 1,000,000'],
    ]);
    const shared = markersOf({ rateLimited: [series({ reason: 'random' }, 5, [1])], shed: [], quotaLimits: [], from: T0, stepMs: STEP });
    expect(shared[0].label).toBe('first 429 (shared capacity)');
  });
});

describe('alerts table', () => {
  const span = (name: string, state: 'pending' | 'firing', start: number, end: number, labels = 'job=a, limiter=gemini'): AlertSpan => ({
    name,
    state,
    severity: 'warning',
    labels,
    start: T0 + start * 1000,
    end: T0 + end * 1000,
  });

  it('collapses flicker into one row per alert and label set, with first pending, first firing and the stretches', () => {
    const rows = alertRows([
      span('LimiterDoorWaitRising', 'pending', 20, 45),
      span('LimiterDoorWaitRising', 'firing', 50, 80),
      span('LimiterDoorWaitRising', 'pending', 100, 110),
      span('LimiterDoorWaitRising', 'firing', 115, 200),
      span('LimiterDoorWaitRising', 'firing', 60, 70, 'job=a, limiter=other'),
      span('LimiterRequestsShed', 'pending', 30, 200),
    ]);
    expect(rows.map((r) => [r.name, r.labels, r.firstPending && (r.firstPending - T0) / 1000, r.firstFiring && (r.firstFiring - T0) / 1000, r.pendingStretches, r.firingStretches, r.firingMs / 1000])).toEqual([
      ['LimiterDoorWaitRising', 'job=a, limiter=gemini', 20, 50, 2, 2, 115],
      ['LimiterRequestsShed', 'job=a, limiter=gemini', 30, undefined, 1, 0, 0],
      ['LimiterDoorWaitRising', 'job=a, limiter=other', undefined, 60, 0, 1, 10],
    ]);
  });

  it('property: one row per distinct alert and label set, whatever the order of the stretches', () => {
    const arb = fc.array(fc.record({ n: fc.constantFrom('A', 'B'), l: fc.constantFrom('x', 'y'), firing: fc.boolean(), start: fc.integer({ min: 0, max: 500 }), len: fc.integer({ min: 0, max: 60 }) }), { maxLength: 30 });
    fc.assert(
      fc.property(arb, (raw) => {
        const spans = raw.map((r) => span(r.n, r.firing ? 'firing' : 'pending', r.start, r.start + r.len, r.l));
        const rows = alertRows(spans);
        expect(rows.length).toBe(new Set(raw.map((r) => `${r.n}/${r.l}`)).size);
        expect(rows.reduce((n, r) => n + r.pendingStretches + r.firingStretches, 0)).toBe(spans.length);
      }),
    );
  });

  it('the page draws one lane and one row per alert and label set, and the markers on the timeline with their legend', () => {
    const d: ReportData = {
      title: 'quotascope run r1',
      runId: 'r1',
      generatedAt: T0,
      range: { from: T0, to: T0 + 300_000 },
      prometheusUrl: 'http://127.0.0.1:9090',
      charts: [],
      alerts: [span('LimiterDoorWaitRising', 'pending', 20, 45), span('LimiterDoorWaitRising', 'firing', 50, 80), span('LimiterDoorWaitRising', 'firing', 100, 120)],
      markers: [
        { kind: 'first-shed', at: T0 + 90_000, label: 'first shed' },
        { kind: 'quota-change', at: T0 + 150_000, label: 'tokens/min quota 1,000,000 → 400,000' },
      ],
      parameters: {},
    };
    const html = renderReport(d);
    const alerts = html.slice(html.indexOf('<section id="alerts">'), html.indexOf('</section>', html.indexOf('<section id="alerts">')));
    expect(alerts.match(/class="lane"/g)).toHaveLength(1);
    expect(alerts.match(/<tr><td>LimiterDoorWaitRising/g)).toHaveLength(1);
    expect(alerts).toContain('50 s</span> (2 stretches)');
    expect(alerts).toContain('<span class="marker first-shed" style="left:30.00%"');
    expect(alerts).toContain('<span class="marker quota-change" style="left:50.00%"');
    expect(alerts).toContain('first shed at 90 s');
    expect(JSON.parse(html.slice(html.indexOf('id="report-data">') + 'id="report-data">'.length, html.indexOf('</script>', html.indexOf('id="report-data">')))).markers).toHaveLength(2);
  });
});

describe('the verdict when the provider cut its quota', () => {
  it('says so, with the cut and the restore', () => {
    const changes = [
      { secondsIn: 120, quota: 'tokens_per_minute', from: 1e6, to: 5e5 },
      { secondsIn: 240, quota: 'tokens_per_minute', from: 5e5, to: 1e6 },
    ];
    expect(quotaCutsLine(changes)).toBe('the provider cut its tokens/min quota mid-run: 1,000,000 → 500,000 at +120 s, back to 1,000,000 at +240 s');
    const v = runVerdict({ outcomes: { served: 170, partial: 2, shed: 8, failed: 0, unfinished: 0 }, providerRateLimited: 12, planVsMeasured: undefined, quotaChanges: changes });
    expect(v.line).toContain('the provider cut its tokens/min quota mid-run: 1,000,000 → 500,000 at +120 s');
  });

  it('says nothing of a quota raised or unchanged', () => {
    expect(quotaCutsLine([{ secondsIn: 60, quota: 'tokens_per_minute', from: 1e6, to: 2e6 }])).toBe('');
    const v = runVerdict({ outcomes: { served: 10, partial: 0, shed: 0, failed: 0, unfinished: 0 }, providerRateLimited: 0, planVsMeasured: undefined, quotaChanges: [] });
    expect(v.line).not.toContain('cut');
  });
});
