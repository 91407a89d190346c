// A verdict is only as good as what it counted: every started request ends as served,
// partial, shed, failed or unfinished (never ok by default); a run too short for the tree is
// lengthened before it starts, with the reason; a run that measured nothing the verdict
// needs says why; the console summary and the report open with the verdict line.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WORKED_EXAMPLE as EX } from '../../agent/worked-example.ts';
import { isShedAnswer, REQUEST_OUTCOMES, requestFailed, requestOutcome } from '../../loadtest/k6/request-status.ts';
import { condenseSummary } from '../../loadtest/k6/runner.ts';
import { SUMMARY_SUBMETRICS, summaryText } from '../../loadtest/k6/summary-text.ts';
import { deadlineNote, fitRunToTree } from '../../loadtest/main.ts';
import { comparePlan, type Measured } from '../../loadtest/measure/plan-vs-measured.ts';
import { unmeasuredMessage } from '../../loadtest/measure/run-outcome.ts';
import { criticalPathSeconds, minimumSteadySeconds, steadyWindow } from '../../loadtest/measure/steady-state.ts';
import { reviewAgentExample } from '../../loadtest/planner/examples.ts';
import { renderReport } from '../../loadtest/report/page.ts';
import { runVerdict } from '../../loadtest/report/verdict.ts';
import { startOptionsSchema } from '../../loadtest/start-options.ts';

describe('how an answered request ended', () => {
  it('a 429 is shed only with the REQUEST_SHED code (native) or a "request shed" detail (ADK)', () => {
    expect(isShedAnswer(429, { error: { code: 'REQUEST_SHED', message: 'x', retryAfterSeconds: 3 } })).toBe(true);
    expect(isShedAnswer(429, { detail: 'request shed: budget cannot fund it within 60 s' })).toBe(true);
    expect(isShedAnswer(429, { error: { code: 'RATE_LIMITED' } })).toBe(false);
    expect(isShedAnswer(429, { detail: 'Too Many Requests' })).toBe(false);
    expect(isShedAnswer(429, undefined)).toBe(false);
    expect(isShedAnswer(503, { error: { code: 'REQUEST_SHED' } })).toBe(false);
  });

  it('every answer has exactly one outcome: shed first, then failed as before, partial when a branch is not ok', () => {
    const outcomes = fc.array(fc.constantFrom('ok', 'timeout', 'rate_limited', 'error'), { maxLength: 8 });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 599 }), fc.boolean(), fc.option(outcomes, { nil: undefined }), fc.nat(3), (status, shed, branches, missing) => {
        const o = requestOutcome(status, shed, branches, missing);
        expect(REQUEST_OUTCOMES).toContain(o);
        if (shed) expect(o).toBe('shed');
        else if (requestFailed(status, branches)) expect(o).toBe('failed');
        else expect(o).toBe(missing > 0 || (branches ?? []).some((b) => b !== 'ok') ? 'partial' : 'served');
      }),
    );
  });

  it("every outcome is a display-only sub-metric of k6's summary", () => {
    for (const o of REQUEST_OUTCOMES) expect(SUMMARY_SUBMETRICS[`qs_request_outcome{outcome:${o}}`]).toEqual(['count>=0']);
  });
});

/** A k6 summary export where `started` requests began and `ended` of each outcome finished. */
function k6Data(started: number, ended: Partial<Record<(typeof REQUEST_OUTCOMES)[number], number>>) {
  const finished = Object.values(ended).reduce((n, v) => n + (v ?? 0), 0);
  const metrics: Record<string, unknown> = {
    qs_requests_started: { values: { count: started } },
    qs_request_duration: { values: { count: finished, med: 10, 'p(95)': 20, 'p(99)': 30, max: 40 } },
    qs_request_failed: { values: { rate: finished ? (ended.failed ?? 0) / finished : 0, passes: ended.failed ?? 0 } },
  };
  for (const o of REQUEST_OUTCOMES) metrics[`qs_request_outcome{outcome:${o}}`] = { values: { count: ended[o] ?? 0 }, thresholds: { 'count>=0': { ok: true } } };
  return { metrics, state: { testRunDurationMs: 60_000 } };
}

describe('every started request is counted', () => {
  it('requests k6 interrupted are unfinished, never ok', () => {
    // The run: 51 started, 10 finished, 41 interrupted.
    const s = condenseSummary(k6Data(51, { served: 10 }));
    expect(s.outcomes).toEqual({ served: 10, partial: 0, shed: 0, failed: 0, unfinished: 41 });
    expect(summaryText(k6Data(51, { served: 10 }), 'main')).toContain('outcomes:         served 10, partial 0, shed 0, failed 0, unfinished 41');
    expect(runVerdict({ outcomes: s.outcomes, providerRateLimited: 0, planVsMeasured: undefined }).line).toContain('unfinished 41 of 51 requests');
  });

  it('the counts always add up to the started requests', () => {
    const count = fc.nat(1000);
    fc.assert(
      fc.property(count, count, count, count, count, (served, partial, shed, failed, unfinished) => {
        const c = condenseSummary(k6Data(served + partial + shed + failed + unfinished, { served, partial, shed, failed })).outcomes;
        expect(c).toEqual({ served, partial, shed, failed, unfinished });
      }),
    );
  });
});

describe('a run long enough for the tree', () => {
  const defaults = startOptionsSchema.parse({});
  // The trip planner: 10 calls, 3 at once at most: 8 calls one after another.
  const tripPlanner = { parallelBranches: 3, callsPerBranch: 1, sequentialSteps: 7 };

  it('a 60 s run of a tree whose critical path is 64 s is lengthened, and says why before it starts', () => {
    const fitted = fitRunToTree({ ...defaults, duration: 60, callSeconds: 8 }, tripPlanner, 'trip_planner');
    expect(fitted.criticalPath).toBe(64);
    expect(fitted.flags.duration).toBe(minimumSteadySeconds(64, 8));
    expect(fitted.note).toBe(
      `--duration 60 s is too short for trip_planner: its critical path is 8 model calls one after another × 8 s = 64 s, and the steady window must see requests start and finish; lengthened to ${fitted.flags.duration} s (pass --duration ${fitted.flags.duration} or more to choose)`,
    );
  });

  it('the default run of the worked example is long enough as it is', () => {
    const fitted = fitRunToTree(defaults, { parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 }, 'review');
    expect(fitted.note).toBeUndefined();
    expect(fitted.flags).toBe(defaults);
    expect(fitRunToTree(defaults, undefined, 'wide').note).toBeUndefined();
  });

  it('a request deadline not longer than the critical path is named before the run: no admitted request could finish', () => {
    const loop = { parallelBranches: 2, callsPerBranch: 1, sequentialSteps: 9 };
    // Unset, the deadline follows the tree: nothing to warn about.
    expect(deadlineNote({ ...defaults, callSeconds: 8 }, loop, 'loop_tools')).toBeUndefined();
    expect(deadlineNote({ ...defaults, callSeconds: 8, requestDeadlineMs: 60_000 }, loop, 'loop_tools')).toBe(
      "the request deadline (60 s) is not longer than loop_tools's critical path (80 s at 8 s per call): no admitted request can finish in time, so the run will shed or cut short every one; pass --request-deadline-ms 160000 (twice the critical path) to give requests room",
    );
    expect(deadlineNote({ ...defaults, callSeconds: 8, requestDeadlineMs: 90_000 }, loop, 'loop_tools')).toBeUndefined();
    expect(deadlineNote({ ...defaults, callSeconds: 8, admission: 'call' }, loop, 'loop_tools')).toBeUndefined();
    expect(deadlineNote(defaults, { parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 }, 'review')).toBeUndefined();
  });

  it('the lengthened steady window starts after one request life and holds two', () => {
    const shape = fc.record({ parallelBranches: fc.integer({ min: 1, max: 20 }), callsPerBranch: fc.integer({ min: 1, max: 10 }), sequentialSteps: fc.integer({ min: 0, max: 20 }) });
    fc.assert(
      fc.property(shape, fc.double({ min: 0.01, max: 600, noNaN: true }), (s, callSeconds) => {
        const cp = criticalPathSeconds(s, callSeconds);
        const d = minimumSteadySeconds(cp, callSeconds);
        const w = steadyWindow({ arrival: { kind: 'constant', start: 0, perMinute: 1, duration: d }, tree: 't', inputTokensPerCall: 1 }, callSeconds);
        expect(w.from).toBeGreaterThanOrEqual(cp);
        expect(w.to - w.from).toBeGreaterThanOrEqual(2 * cp);
        expect(d).toBeLessThanOrEqual(Math.ceil(4 * cp + 2));
      }),
    );
  });
});

describe('a run that measured nothing the verdict needs', () => {
  it('says why in one line: no limiter metrics, or no steady-state completion', () => {
    expect(unmeasuredMessage({ limiterSeries: 0 })).toMatch(/^measured nothing the verdict needs: Prometheus scraped no limiter metrics/);
    expect(unmeasuredMessage({ limiterSeries: 12, steady: { completions: 0, seconds: 27.4 } })).toBe(
      'measured nothing the verdict needs: no request completed inside the 27 s steady window, so what the quota serves is unknown: lengthen the run (--duration) or lower the load',
    );
    expect(unmeasuredMessage({ limiterSeries: 12, steady: { completions: 3, seconds: 27 } })).toBeUndefined();
    expect(unmeasuredMessage({ limiterSeries: 12 })).toBeUndefined();
    for (const m of [unmeasuredMessage({ limiterSeries: 0 }), unmeasuredMessage({ limiterSeries: 1, steady: { completions: 0, seconds: 9 } })]) {
      expect(m).not.toContain('\n');
    }
  });
});

describe('the verdict first', () => {
  const window = { start: 0, end: 60_000 };
  const measured = (served: number, shed: number, partial: number): Measured => ({
    userRequestsPerMinute: served,
    answeredRequestsPerMinute: served + partial,
    requests: { served, shed, partial },
    callsInFlight: 20,
    permitsInUseScraped: undefined,
    callSeconds: 8,
    window,
  });

  it('the worked example does not fit: served, shed, partial, unfinished and the best fix', () => {
    const c = comparePlan(reviewAgentExample, measured(30, 10, 0));
    expect(c.admission).toBe('request');
    expect(c.rows.map((r) => r.quantity)).toEqual(['served requests/min', 'shed requests/min', 'partial requests/min', 'calls in flight']);
    expect(c.planned.fits).toBe(false);
    const v = runVerdict({ outcomes: { served: 150, partial: 1, shed: 48, failed: 0, unfinished: 3 }, providerRateLimited: 0, planVsMeasured: c });
    expect(v.fits).toBe(false);
    expect(v.line).toMatch(
      /^verdict: the tree does NOT fit its quota at 40 user requests\/min \(the budget sustains 31\); served 150, partial 1, shed 48, failed 0, unfinished 3 of 202 requests; best fix: \S/,
    );
    expect(v.line).toContain(c.planned.bestFix);
  });

  it('fits when the plan says so and no request was shed, partial or failed', () => {
    const c = comparePlan({ ...reviewAgentExample, userRequestsPerMinute: 20 }, measured(20, 0, 0));
    const v = runVerdict({ outcomes: { served: 100, partial: 0, shed: 0, failed: 0, unfinished: 2 }, providerRateLimited: 0, planVsMeasured: c });
    expect(v).toEqual({ fits: true, line: 'verdict: the tree fits its quota at 20 user requests/min; served 100, partial 0, shed 0, failed 0, unfinished 2 of 102 requests' });
    const bad = runVerdict({ outcomes: { served: 90, partial: 10, shed: 0, failed: 0, unfinished: 0 }, providerRateLimited: 23, planVsMeasured: c });
    expect(bad.fits).toBe(false);
    expect(bad.line).toContain("the plan says it fits: check the run's 10 partial, 23 provider 429s");
    expect(runVerdict({ outcomes: undefined, providerRateLimited: 0, planVsMeasured: c }).fits).toBeUndefined();
  });

  it('the report page opens with the verdict, before the tables and charts', () => {
    const c = comparePlan(reviewAgentExample, measured(30, 10, 0));
    const k6 = condenseSummary(k6Data(202, { served: 150, partial: 1, shed: 48 }));
    const html = renderReport({
      title: 'run',
      runId: 'r',
      generatedAt: 0,
      range: { from: 0, to: 60_000 },
      prometheusUrl: 'http://127.0.0.1:9',
      charts: [],
      alerts: [],
      parameters: {},
      k6,
      planVsMeasured: c,
    });
    const body = html.slice(html.indexOf('<body>'));
    const verdict = body.indexOf('<p id="verdict" class="verdict misfit">verdict: the tree does NOT fit its quota at 40 user requests/min');
    expect(verdict).toBeGreaterThan(0);
    expect(verdict).toBeLessThan(body.indexOf('id="summary"'));
    expect(body).toContain('served 150, partial 1, shed 48, failed 0, unfinished 3');
  });

  it('the planner prints served = the whole requests the budget holds, shed = demand − served, partial ≈ 0', () => {
    expect(EX.userRequestsPerMinute).toBe(40);
    const c = comparePlan(reviewAgentExample, measured(30, 10, 0));
    const [served, shed, partial] = c.rows;
    expect(served.planned + shed.planned).toBeCloseTo(40, 9);
    // Each of the 3 replicas' windows holds 10 whole requests of the 10.3 its tokens would fund.
    expect(c.planned.sustainedUserRequestsPerMinute / 3).toBeGreaterThan(10);
    expect(served.planned).toBeCloseTo(Math.floor(c.planned.sustainedUserRequestsPerMinute / 3) * 3, 9);
    expect(partial.planned).toBe(0);
  });
});
