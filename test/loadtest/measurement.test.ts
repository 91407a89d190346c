// The measurement pieces of plan vs measured and of the run report: random-time gauge sampling
// (against a real HTTP /metrics whose gauge follows a periodic request cycle), the steady
// window, the mock's mean latency, and the report's legends and probe series.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GaugeProbe } from '../../loadtest/measure/gauge-probe.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import type { ScenarioFile } from '../../loadtest/scenario/types.ts';
import { meanOf, mockParameters } from '../../loadtest/stack/mock-parameters.ts';
import { legendOf, trailingMean } from '../../loadtest/report/collect.ts';
import { steadyPhase, steadyWindow, whyNoComparison } from '../../loadtest/measure/steady-state.ts';

describe('GaugeProbe: random-time samples see the time average a periodic scrape misses', () => {
  // A request cycle of 500 ms: 5 calls in flight for the first 100 ms, 0 after (mean 1.0).
  const PERIOD = 500;
  const t0 = Date.now();
  const gauge = () => (((Date.now() - t0) % PERIOD) < 100 ? 5 : 0);
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.end(`# HELP llm_limiter_permits_in_use x\nllm_limiter_permits_in_use{limiter="gemini"} ${gauge()}\nllm_limiter_permits_in_use_other 99\n`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('averages to the true mean within 30 %, where a scrape every 1,000 ms sees one phase only', async () => {
    const probe = new GaugeProbe({ urls: [url], metric: 'llm_limiter_permits_in_use', meanIntervalMs: 20 });
    const start = Date.now();
    probe.start();
    await new Promise((r) => setTimeout(r, 3000));
    await probe.stop();
    const mean = probe.meanBetween(start, Date.now());
    expect(probe.samples.length).toBeGreaterThan(60);
    expect(mean).toBeGreaterThan(0.7);
    expect(mean).toBeLessThan(1.3);
    // What a periodic sampler at twice the cycle reads: the same phase every time.
    const periodic = [0, 1, 2, 3, 4, 5].map((i) => (((i * 1000 + 250) % PERIOD) < 100 ? 5 : 0));
    expect(new Set(periodic).size).toBe(1);
  });

  it('sums every series of the metric, not metrics that share its prefix', () => {
    const text = 'm{a="1"} 2\nm{a="2"} 3.5\nm_total 100\n# m 7\nm 1\n';
    expect(sumOfMetric(text, 'm')).toBe(6.5);
  });

  it('refuses an empty URL list', () => {
    expect(() => new GaugeProbe({ urls: [], metric: 'm' })).toThrow(/urls/);
  });
});

describe('steady window', () => {
  const main: ScenarioFile = {
    name: 'main',
    arrivals: [
      { kind: 'burst', at: 0, users: 10 },
      { kind: 'constant', start: 24, perMinute: 40, duration: 60 },
    ],
  };

  it('starts after a warm-up of a third of the phase or 4 calls, ends 1 s before the phase', () => {
    const phase = steadyPhase(main);
    if (!phase) throw new Error('no phase');
    expect(phase.tree).toBe('review');
    expect(steadyWindow(phase, 8)).toEqual({ from: 24 + 30, to: 83 }); // 4 × 8 s capped at half the phase
    expect(steadyWindow(phase, 1)).toEqual({ from: 24 + 20, to: 83 });
    expect(whyNoComparison(main, phase, steadyWindow(phase, 8))).toBeUndefined();
  });

  it("holds the last whole quota windows where one fits: start's default phase measures 180 s, not 199 s", () => {
    const phase = steadyPhase({ ...main, arrivals: [main.arrivals[0] as ScenarioFile['arrivals'][number], { kind: 'constant', start: 24, perMinute: 40, duration: 300 }] });
    if (!phase) throw new Error('no phase');
    expect(steadyWindow(phase, 8)).toEqual({ from: 24 + 119, to: 323 });
    expect(steadyWindow(phase, 8, 30)).toEqual({ from: 24 + 119, to: 323 });
    expect(steadyWindow(phase, 8, 45)).toEqual({ from: 323 - 4 * 45, to: 323 });
  });

  it('refuses a window that another arrival overlaps, another tree, or no constant rate', () => {
    const lanes: ScenarioFile = { ...main, arrivals: [...main.arrivals, { kind: 'burst', at: 60, users: 10 }] };
    const phase = steadyPhase(lanes);
    expect(whyNoComparison(lanes, phase, { from: 54, to: 83 })).toMatch(/burst.*overlaps/);
    const wide: ScenarioFile = { ...main, defaults: { tree: 'wide' } };
    expect(whyNoComparison(wide, steadyPhase(wide), { from: 54, to: 83 })).toMatch(/review tree/);
    const burstOnly: ScenarioFile = { name: 'b', arrivals: [{ kind: 'burst', at: 0, users: 3 }] };
    expect(whyNoComparison(burstOnly, steadyPhase(burstOnly), { from: 0, to: 0 })).toMatch(/no constant-rate/);
  });

  it('the window always lies inside the phase (property)', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1000, noNaN: true }), fc.double({ min: 4, max: 3600, noNaN: true }), fc.double({ min: 0.01, max: 60, noNaN: true }), (start, duration, call) => {
        const phase = steadyPhase({ name: 'p', arrivals: [{ kind: 'constant', start, perMinute: 10, duration }] });
        if (!phase) return false;
        const w = steadyWindow(phase, call);
        const length = w.to - w.from;
        const wholeWindows = length < 60 || Math.abs(length / 60 - Math.round(length / 60)) < 1e-9;
        return w.from >= start && w.to <= start + duration && w.from < w.to && w.from - start <= duration / 2 + 60 + 1e-9 && wholeWindows;
      }),
    );
  });
});

describe('mock parameters', () => {
  it('means of the distributions (lognormal: p50 · e^(σ²/2))', () => {
    expect(meanOf({ kind: 'fixed', value: 3 })).toBe(3);
    expect(meanOf({ kind: 'uniform', min: 2, max: 4 })).toBe(3);
    expect(meanOf({ kind: 'normal', mean: 800, stddev: 150 })).toBe(800);
    const sigma = Math.log(2500 / 600) / 2.326_347_874;
    expect(meanOf({ kind: 'lognormal', p50: 600, p99: 2500 })).toBeCloseTo(600 * Math.exp((sigma * sigma) / 2), 6);
  });

  it('latency = first token + the other output tokens × per-token time, like the mock', () => {
    const p = mockParameters({
      requestsPerMinute: 1000,
      tokensPerMinute: 1_000_000,
      timeToFirstTokenMs: { kind: 'fixed', value: 100 },
      perOutputTokenMs: { kind: 'fixed', value: 3 },
      outputTokens: { kind: 'fixed', value: 100 },
    });
    expect(p).toEqual({ quotaRequestsPerMinute: 1000, quotaTokensPerMinute: 1_000_000, outputTokensPerCall: 100, countedTokens: 'input', latencySeconds: 0.397 });
  });

  it('a config without the fields names the one missing', () => {
    expect(() => mockParameters({ requestsPerMinute: 1 })).toThrow(/tokensPerMinute/);
  });
});

describe('report series', () => {
  it('fills Grafana legend formats from a series\' labels', () => {
    expect(legendOf('{{instance}} in use', { instance: '127.0.0.1:8080' })).toBe('127.0.0.1:8080 in use');
    expect(legendOf('{{ agent }} 429', {})).toBe(' 429');
  });

  it('trailing mean of probe samples', () => {
    const samples = [
      { at: 0, value: 2 },
      { at: 500, value: 4 },
      { at: 1500, value: 6 },
    ];
    expect(trailingMean(samples, 0, 2000, 1000, 1000)).toEqual([
      [0, 2],
      [1000, 4],
      [2000, 6],
    ]);
  });
});
