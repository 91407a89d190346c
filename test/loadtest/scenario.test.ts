import { readdirSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildOptions, buildThresholds } from '../../loadtest/k6/build-options.ts';
import { arrivalTimes } from '../../loadtest/drive/node-driver.ts';
import { scaleScenario } from '../../loadtest/scenario/scale.ts';
import { loadScenario, parseScenario, SCENARIOS_DIR, ScenarioError } from '../../loadtest/scenario/schema.ts';
import { convertAccessLog } from '../../loadtest/scenario/trace-convert.ts';

describe('scenario files', () => {
  const names = readdirSync(SCENARIOS_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.replace(/\.json$/, ''));

  it('ships the seven scenarios and each validates and builds k6 scenarios', () => {
    expect(names.sort()).toEqual(['burst', 'lanes', 'quota-incident', 'ramp', 'shared-capacity', 'steady-40rpm', 'trace']);
    for (const name of names) {
      const built = buildOptions(loadScenario(name));
      expect(Object.keys(built.scenarios).length, name).toBeGreaterThan(0);
      for (const key of Object.keys(built.scenarios)) expect(key).toMatch(/^[0-9a-zA-Z_-]+$/);
    }
  });

  it('inlines the sample trace and replays each record once', () => {
    const s = loadScenario('trace');
    const built = buildOptions(s);
    const vus = Object.values(built.scenarios).reduce((n, sc) => n + (sc.vus ?? 0), 0);
    expect(vus).toBe(built.trace.length);
    expect(built.trace.length).toBeGreaterThan(30);
  });

  it('names the bad field of a malformed scenario', () => {
    const bad = { name: 'x', arrivals: [{ kind: 'burst', at: 0, users: -3 }] };
    expect(() => parseScenario(bad, 'bad.json')).toThrow(ScenarioError);
    expect(() => parseScenario(bad, 'bad.json')).toThrow(/arrivals\[0\]\.users/);
    expect(() => parseScenario({ name: 'x', arrivals: [{ kind: 'constant', start: 0, perMinute: 5 }] })).toThrow(/arrivals\[0\]\.duration/);
    expect(() => parseScenario({ name: 'x', arrivals: [], thresholds: {} })).toThrow(/arrivals/);
    expect(() => parseScenario({ name: 'x', arrivals: [{ kind: 'burst', at: 0, users: 1, tyop: 1 }] })).toThrow(/tyop|arrivals\[0\]/);
  });

  it('shared-capacity turns the mock\'s throttle probability (5 %) on and off on its timeline, within the arrivals', () => {
    const s = loadScenario('shared-capacity');
    const steps = s.mock?.timeline ?? [];
    expect(steps.map((step) => step.set.throttleProbability)).toEqual([0.05, 0, 0.05, 0]);
    const end = Math.max(...s.arrivals.map((a) => (a.kind === 'constant' ? a.start + a.duration : 0)));
    for (const step of steps) expect(step.at).toBeLessThan(end);
  });

  it('checks the mock settings with the mock\'s own rules and names the field', () => {
    const base = { name: 'x', arrivals: [{ kind: 'constant', start: 0, perMinute: 5, duration: 10 }] };
    const withMock = (mock: unknown) => () => parseScenario({ ...base, mock }, 'bad.json');
    expect(withMock({ timeline: [{ at: 5, set: { throttleProbability: 1.5 } }] })).toThrow(/mock\.timeline\[0\]\.set: throttleProbability: Too big/);
    expect(withMock({ timeline: [{ at: 5, set: { throttleProbabilty: 0.05 } }] })).toThrow(/mock\.timeline\[0\]\.set: .*throttleProbabilty/);
    expect(withMock({ config: { throttleProbability: -1 } })).toThrow(/mock\.config\.throttleProbability: Too small/);
    expect(withMock({ config: { throttleProbability: 0.05 }, timeline: [{ at: 5, set: { throttleProbability: 0 } }] })()).toBeTruthy();
  });

  it('turns thresholds into k6 expressions', () => {
    const t = buildThresholds({ name: 'x', arrivals: [], thresholds: { httpFailedRate: 0.01, p95Ms: { interactive: 500 }, missingBranchesRate: 0 } });
    expect(t).toEqual({
      http_req_failed: ['rate<=0.01'],
      'qs_request_duration{traffic_class:interactive}': ['p(95)<500'],
      qs_missing_branches: ['rate<=0'],
    });
  });

  it('bursts send exactly users x times requests, at the scaled offsets (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 5 }), fc.double({ min: 0.01, max: 3, noNaN: true }), (users, times, scale) => {
        const s = scaleScenario({ name: 'p', arrivals: [{ kind: 'burst', at: 2, users, repeat: { every: 10, times } }] }, { time: scale });
        const built = buildOptions(s);
        const scenarios = Object.values(built.scenarios);
        expect(scenarios.reduce((n, sc) => n + (sc.vus ?? 0) * (sc.iterations ?? 0), 0)).toBe(users * times);
        expect(arrivalTimes(s)).toHaveLength(users * times);
        expect(scenarios.map((sc) => sc.startTime)).toContain(`${Math.round(2 * scale * 1000)}ms`);
      }),
    );
  });

  it('a constant rate keeps its request count under time scaling (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 120 }), fc.integer({ min: 10, max: 300 }), fc.double({ min: 0.05, max: 2, noNaN: true }), (perMinute, duration, scale) => {
        const base = { name: 'c', arrivals: [{ kind: 'constant' as const, start: 0, perMinute, duration }] };
        const expected = arrivalTimes(base).length;
        const scaled = arrivalTimes(scaleScenario(base, { time: scale }));
        expect(Math.abs(scaled.length - expected)).toBeLessThanOrEqual(1);
        const sc = Object.values(buildOptions(scaleScenario(base, { time: scale })).scenarios)[0];
        // rate per timeUnit stays close to perMinute / scale
        const unitS = Number.parseFloat(sc.timeUnit ?? '60s');
        expect(Math.abs(((sc.rate ?? 0) / unitS) * 60 - perMinute / scale)).toBeLessThan(0.01 * (perMinute / scale) + 0.01);
      }),
    );
  });
});

describe('access-log converter', () => {
  it('makes times relative, sizes from document chars, skips non-request lines', () => {
    const log = [
      '{"time":"2026-01-01T10:00:05.500Z","tree":"review","documentChars":19600,"trafficClass":"batch","status":200}',
      '{"msg":"agent: replica 1 listening"}',
      '{"time":"2026-01-01T10:00:05.000Z","tree":"wide","documentChars":400,"width":6}',
    ].join('\n');
    expect(convertAccessLog(log)).toEqual([
      { at: 0, tree: 'wide', inputTokensPerCall: 200, trafficClass: 'interactive', width: 6 },
      { at: 0.5, tree: 'review', inputTokensPerCall: 5000, trafficClass: 'batch' },
    ]);
  });

  it('names the line and field of a bad record', () => {
    expect(() => convertAccessLog('{"tree":"review","documentChars":10}')).toThrow(/line 1\.time/);
    expect(() => convertAccessLog('not json')).toThrow(/line 1/);
  });
});
