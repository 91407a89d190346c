// A verdict is only as good as what it counted: every started request ends as served,
// partial, shed, failed or unfinished (never ok by default); a run too short for the tree is
// lengthened before it starts, with the reason; a run that measured nothing the verdict
// needs says why; the console summary and the report open with the verdict line.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WORKED_EXAMPLE as EX } from '../../agent/worked-example.ts';
import type { TreeShape } from '../../agent/tree-shapes.ts';
import { isShedAnswer, REQUEST_OUTCOMES, requestFailed, requestOutcome } from '../../loadtest/k6/request-status.ts';
import { condenseSummary } from '../../loadtest/k6/summary.ts';
import { formatHttpFailed, SUMMARY_SUBMETRICS, summaryText } from '../../loadtest/k6/summary-text.ts';
import { deadlineNote, fitRunToTree } from '../../loadtest/run-fit.ts';
import { BUILT_IN_SHAPES } from '../../loadtest/measure/agent-shapes.ts';
import { comparePlan, compareSteadyRun, type Measured } from '../../loadtest/measure/plan-vs-measured.ts';
import { fleetFiguresOf, steadyRunOf } from '../../loadtest/measure/steady-collect.ts';
import { planSteadyPhase } from '../../loadtest/measure/steady-plan.ts';
import { unmeasuredMessage } from '../../loadtest/measure/run-outcome.ts';
import { arrivalsBefore, criticalPathSeconds, minimumSteadySeconds, type StackParameters, steadyFrame, steadyPhase, steadyWindow, treeTiming } from '../../loadtest/measure/steady-state.ts';
import { reviewAgentExample } from '../../loadtest/planner/examples.ts';
import { renderReport } from '../../loadtest/report/page.ts';
import { formatTimeouts } from '../../loadtest/report/summary.ts';
import { runVerdict } from '../../loadtest/report/verdict.ts';
import { DEFAULT_STEADY_SECONDS, startOptionsSchema } from '../../loadtest/start-options.ts';

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
  // The tree's timing as the run works it out once (run-spec.ts).
  const timingOf = (shape: TreeShape | undefined, f: { callSeconds: number; requestDeadlineMs?: number }) => treeTiming(shape ? criticalPathSeconds(shape, f.callSeconds) : 0, f);
  // The trip planner: 10 calls, 3 at once at most: 8 calls one after another.
  const tripPlanner = { parallelBranches: 3, callsPerBranch: 1, sequentialSteps: 7 };

  it('a 60 s run of a tree whose critical path is 64 s is lengthened, and says why before it starts', () => {
    const fitted = fitRunToTree({ ...defaults, duration: 60, callSeconds: 8 }, tripPlanner, 'trip_planner', timingOf(tripPlanner, { ...defaults, callSeconds: 8 }));
    expect(fitted.criticalPath).toBe(64);
    expect(fitted.flags.duration).toBe(minimumSteadySeconds(64, 8));
    expect(fitted.note).toBe(
      `--duration 60 s is too short for trip_planner: its critical path is 8 model calls one after another × 8 s = 64 s, and the steady window must see requests start and finish; lengthened to ${fitted.flags.duration} s (pass --duration ${fitted.flags.duration} or more to choose)`,
    );
  });

  it('the default run of the worked example is long enough as it is', () => {
    const fitted = fitRunToTree(defaults, { parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 }, 'review', timingOf({ parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 }, defaults));
    expect(fitted.note).toBeUndefined();
    expect(fitted.flags).toEqual({ ...defaults, duration: DEFAULT_STEADY_SECONDS });
    expect(fitRunToTree(defaults, undefined, 'wide', timingOf(undefined, defaults)).note).toBeUndefined();
  });

  it("a tree of the user's own gets 9 quota windows of steady traffic unless --duration says otherwise, and says so", () => {
    const timing = timingOf(tripPlanner, { ...defaults, callSeconds: 2 });
    const own = fitRunToTree({ ...defaults, callSeconds: 2 }, tripPlanner, 'trip_planner', timing, true);
    expect(own.flags.duration).toBe(541);
    expect(own.note).toBe("steady traffic for 541 s (9 quota windows: trip_planner's door settles over 4, and the last 5 are measured; pass --duration to choose)");
    // The window steadyWindow measures: the last 5 quota windows, after 4 of warm-up.
    expect(steadyWindow({ arrival: { kind: 'constant', start: 0, perMinute: 40, duration: 541 }, tree: 't', inputTokensPerCall: 1 }, 2)).toEqual({ from: 240, to: 540 });
    expect(fitRunToTree({ ...defaults, callSeconds: 2, duration: 300 }, tripPlanner, 'trip_planner', timing, true)).toEqual({ flags: { ...defaults, callSeconds: 2, duration: 300 }, criticalPath: 16 });
    // Call by call there is no door whose admissions repeat: the samples' default.
    expect(fitRunToTree({ ...defaults, callSeconds: 2, admission: 'call' }, tripPlanner, 'trip_planner', timing, true).flags.duration).toBe(DEFAULT_STEADY_SECONDS);
  });

  it('a request deadline not longer than the critical path is named before the run: no admitted request could finish', () => {
    const loop = { parallelBranches: 2, callsPerBranch: 1, sequentialSteps: 9 };
    // Unset, the deadline follows the tree: nothing to warn about.
    expect(deadlineNote({ ...defaults, callSeconds: 8 }, loop, 'loop_tools', timingOf(loop, { ...defaults, callSeconds: 8 }))).toBeUndefined();
    expect(deadlineNote({ ...defaults, callSeconds: 8, requestDeadlineMs: 60_000 }, loop, 'loop_tools', timingOf(loop, { ...defaults, callSeconds: 8, requestDeadlineMs: 60_000 }))).toBe(
      "the request deadline (60 s) is not longer than loop_tools's critical path (80 s at 8 s per call): no admitted request can finish in time, so the run will shed or cut short every one; pass --request-deadline-ms 160000 (twice the critical path) to give requests room",
    );
    expect(deadlineNote({ ...defaults, callSeconds: 8, requestDeadlineMs: 90_000 }, loop, 'loop_tools', timingOf(loop, { ...defaults, callSeconds: 8, requestDeadlineMs: 90_000 }))).toBeUndefined();
    expect(deadlineNote({ ...defaults, callSeconds: 8, admission: 'call' }, loop, 'loop_tools', timingOf(loop, { ...defaults, callSeconds: 8 }))).toBeUndefined();
    expect(deadlineNote(defaults, { parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 }, 'review', timingOf({ parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 }, defaults))).toBeUndefined();
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
        // Whole quota windows cost the measuring window less than one, the phase at most two more.
        expect(d).toBeLessThanOrEqual(Math.ceil(4 * cp + 2) + 2 * 60);
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

describe('partial requests the limiter cut are named as the limiter’s', () => {
  const window = { start: 0, end: 60_000 };
  const light: Measured = { userRequestsPerMinute: 6, answeredRequestsPerMinute: 6, requests: { served: 5, shed: 0, partial: 1 }, callsInFlight: 5, permitsInUseScraped: undefined, callSeconds: 8, window };

  it('a light run whose partial requests all met limiter timeouts: the tree fits, the limiter cut them (by reason)', () => {
    const c = comparePlan({ ...reviewAgentExample, userRequestsPerMinute: 6 }, light);
    expect(c.planned.fits).toBe(true);
    const v = runVerdict({
      outcomes: { served: 29, partial: 6, shed: 0, failed: 0, unfinished: 0 },
      providerRateLimited: 0,
      planVsMeasured: c,
      causes: { timeoutsByReason: { request_deadline: 17 }, branchOutcomes: { ok: 150, timeout: 17 } },
    });
    expect(v.fits).toBe(true);
    expect(v.line).not.toContain('does NOT fit');
    expect(v.line).toContain("6 partial requests came from the limiter (request_deadline 17 timeouts), not from the tree's fit");
  });

  it('a shared budget failing closed is the limiter’s too; over the plan the tree still does not fit, and says both', () => {
    const c = comparePlan(reviewAgentExample, light);
    const v = runVerdict({
      outcomes: { served: 70, partial: 7, shed: 134, failed: 0, unfinished: 0 },
      providerRateLimited: 0,
      planVsMeasured: c,
      causes: { timeoutsByReason: { budget: 2 }, branchOutcomes: { ok: 300, budget_unavailable: 5 } },
    });
    expect(v.fits).toBe(false);
    expect(v.line).toContain("7 partial requests came from the limiter (budget 2 timeouts, budget_unavailable 5 branches), not from the tree's fit");
    expect(v.line).toContain('best fix:');
  });

  it('provider failures beside limiter timeouts: partial still counts against the run, the limiter’s share is named', () => {
    const c = comparePlan({ ...reviewAgentExample, userRequestsPerMinute: 6 }, light);
    const v = runVerdict({
      outcomes: { served: 29, partial: 6, shed: 0, failed: 0, unfinished: 0 },
      providerRateLimited: 0,
      planVsMeasured: c,
      causes: { timeoutsByReason: { request_deadline: 3 }, branchOutcomes: { ok: 150, timeout: 3, error: 4 } },
    });
    expect(v.fits).toBe(false);
    expect(v.line).toContain('some of the 6 partial requests came from the limiter (request_deadline 3 timeouts), the others from provider failures');
    expect(v.line).toContain("the plan says it fits: check the run's 6 partial");
  });

  it('failed requests answered 200 with every branch cut by the limiter are the limiter’s too (a deep chain on a cold limiter)', () => {
    const c = comparePlan({ ...reviewAgentExample, userRequestsPerMinute: 6 }, light);
    const causes = { timeoutsByReason: { request_deadline: 28 }, branchOutcomes: { ok: 500, timeout: 16 }, statusCodes: { '200': 69 } };
    const v = runVerdict({ outcomes: { served: 59, partial: 3, shed: 0, failed: 7, unfinished: 0 }, providerRateLimited: 0, planVsMeasured: c, causes });
    expect(v.fits).toBe(true);
    expect(v.line).toContain("3 partial and 7 failed (every branch cut) requests came from the limiter (request_deadline 28 timeouts), not from the tree's fit");
    // A failed request with no answer (HTTP 0, 5xx) is not the limiter's.
    const other = runVerdict({ outcomes: { served: 59, partial: 3, shed: 0, failed: 7, unfinished: 0 }, providerRateLimited: 0, planVsMeasured: c, causes: { ...causes, statusCodes: { '200': 62, '500': 7 } } });
    expect(other.fits).toBe(false);
    expect(other.line).toContain("check the run's 7 failed");
  });

  it('no limiter cause: partial requests count against the run as before', () => {
    const c = comparePlan({ ...reviewAgentExample, userRequestsPerMinute: 6 }, light);
    const v = runVerdict({ outcomes: { served: 29, partial: 6, shed: 0, failed: 0, unfinished: 0 }, providerRateLimited: 0, planVsMeasured: c, causes: { branchOutcomes: { ok: 100, error: 6 } } });
    expect(v.fits).toBe(false);
    expect(v.line).not.toContain('from the limiter');
  });
});

describe('the summary names what it counts', () => {
  it('limiter timeouts are printed per reason, never as "gave up at maxWait" when the reason was the request deadline', () => {
    expect(formatTimeouts(17, { request_deadline: 17 })).toBe("17 (request_deadline 17: could not finish before its request's deadline)");
    expect(formatTimeouts(5, { permit: 2, budget: 3 })).toBe('5 (permit 2: waited maxWait for a permit; budget 3: waited maxWait for token budget)');
    expect(formatTimeouts(0, {})).toBe('0');
  });

  it("served requests' durations apart from the shed ones' instant 429s, and k6's http_req_failed explained beside failed 0", () => {
    const data = k6Data(211, { served: 70, partial: 7, shed: 134 });
    Object.assign(data.metrics, {
      qs_served_request_duration: { values: { count: 70, med: 61_000, 'p(95)': 70_000, 'p(99)': 72_000, max: 73_000 } },
      http_req_failed: { values: { rate: 0.635 } },
    });
    const text = summaryText(data, 'main');
    expect(text).toContain('served duration:  p50 61.00s  p95 70.00s  p99 72.00s  max 73.00s (served requests)');
    expect(text).toContain('(every answer, the instant 429s of shed requests included)');
    expect(text).toContain("HTTP requests failed 63.5 % (k6's http_req_failed: the 429s of 134 shed requests count there; user requests failed 0)");
    const s = condenseSummary(data);
    expect(s.servedDurationMs).toEqual({ p50: 61_000, p95: 70_000, p99: 72_000, max: 73_000 });
    expect(formatHttpFailed(s.failedRate, s.outcomes)).toBe("HTTP requests failed 63.5 % (k6's http_req_failed: the 429s of 134 shed requests count there; user requests failed 0)");
  });

  it('branch outcomes by kind reach the run summary (what the verdict reads the limiter’s part from)', () => {
    const data = k6Data(3, { served: 2, partial: 1 });
    Object.assign(data.metrics, {
      'qs_branch_outcomes{outcome:ok}': { values: { count: 10 } },
      'qs_branch_outcomes{outcome:timeout}': { values: { count: 2 } },
    });
    expect(condenseSummary(data).branchOutcomesByKind).toEqual({ ok: 10, timeout: 2 });
  });
});

describe('sheds of an opening burst are told from sheds at the steady rate', () => {
  const window = { start: 0, end: 60_000 };
  const light: Measured = { userRequestsPerMinute: 4, answeredRequestsPerMinute: 4, requests: { served: 4, shed: 0, partial: 0 }, callsInFlight: 3, permitsInUseScraped: undefined, callSeconds: 8, window };
  const scenario = {
    name: 'main',
    defaults: { tree: 'review', inputTokensPerCall: 5000 },
    arrivals: [
      { kind: 'burst' as const, at: 0, users: 10 },
      { kind: 'constant' as const, start: 24, perMinute: 4, duration: 300 },
    ],
  };

  it('names the arrivals before the steady phase', () => {
    const phase = steadyPhase(scenario);
    expect(phase).toBeDefined();
    expect(arrivalsBefore(scenario, phase as NonNullable<typeof phase>)).toBe('the opening burst of 10 users');
    const steadyOnly = { ...scenario, arrivals: [scenario.arrivals[1]] };
    expect(arrivalsBefore(steadyOnly, steadyPhase(steadyOnly) as NonNullable<typeof phase>)).toBeUndefined();
  });

  it("carries the steady window's shed count and what came before it from the collected answers to the comparison", () => {
    const frame = steadyFrame(scenario, BUILT_IN_SHAPES, 8, 0, 400_000);
    if ('skipped' in frame) throw new Error(frame.skipped);
    expect(frame.before).toBe('the opening burst of 10 users');
    const fleet = { seconds: 200, completed: 13, okCalls: 65, callsInFlight: 2, callSeconds: 8, permitsInUseScraped: 2, admissions: 15, admitted: 15, shed: 0, partial: 0 };
    const run = steadyRunOf(frame, undefined, { kind: 'fleet', fleet }, 'http://127.0.0.1:1');
    if ('skipped' in run) throw new Error(run.skipped);
    expect(run.steadyRequests).toEqual({ shed: 0, before: 'the opening burst of 10 users' });
    const steadyStack: StackParameters = { outputTokensPerCall: 500, countedTokens: 'input', latencySeconds: 8, quotaRequestsPerMinute: 1000, quotaTokensPerMinute: 1_000_000, budgetFraction: 0.9, replicas: 3 };
    const compared = compareSteadyRun(run, steadyStack, undefined, planSteadyPhase(frame.phase, frame.shape, [], steadyStack));
    expect(compared.steadyRequests).toEqual({ shed: 0, before: 'the opening burst of 10 users' });
    // Per-call admission (no request admitted or shed): nothing to tell apart.
    const perCall = steadyRunOf(frame, undefined, { kind: 'fleet', fleet: { ...fleet, admissions: 0 } }, 'http://127.0.0.1:1');
    expect('skipped' in perCall ? perCall : perCall.steadyRequests).toBeUndefined();
  });

  it('served is what the door admitted in the window less the partial, as the forward run counts, not what completed in it', () => {
    // A deep tree's door admitted 37 in the window, 1 of them ended partial; 33 requests completed in it.
    const answers = { seconds: 240, completed: 33, okCalls: 384, callsInFlight: 12, callSeconds: 7, permitsInUseScraped: 18, admissions: 120, admitted: 37, shed: 83, partial: 1 };
    expect(fleetFiguresOf(answers).requests).toEqual({ served: 36, shed: 83, partial: 1 });
    expect(fleetFiguresOf({ ...answers, admissions: 0 }).requests).toBeUndefined();
  });

  it('fits when every shed came before the steady window, and says what the burst did', () => {
    const c = comparePlan({ ...reviewAgentExample, userRequestsPerMinute: 4 }, light);
    expect(c.planned.fits).toBe(true);
    const outcomes = { served: 29, partial: 0, shed: 2, failed: 0, unfinished: 0 };
    const v = runVerdict({ outcomes, providerRateLimited: 0, planVsMeasured: { ...c, steadyRequests: { shed: 0, before: 'the opening burst of 10 users' } } });
    expect(v.fits).toBe(true);
    expect(v.line).toMatch(/^verdict: the tree fits its quota at 4 user requests\/min; served 29, partial 0, shed 2/);
    expect(v.line).toContain('the 2 shed came before the steady window (the opening burst of 10 users on cold limiters, more than a window funds at once, and the warm-up): none at the steady rate');
    // Without the steady count every shed is held against the run, as before.
    expect(runVerdict({ outcomes, providerRateLimited: 0, planVsMeasured: c }).line).toContain("the plan says it fits: check the run's 2 shed");
  });

  it('a shed in the steady window is still a misfit, every shed counted', () => {
    const c = comparePlan({ ...reviewAgentExample, userRequestsPerMinute: 4 }, light);
    const v = runVerdict({ outcomes: { served: 28, partial: 0, shed: 3, failed: 0, unfinished: 0 }, providerRateLimited: 0, planVsMeasured: { ...c, steadyRequests: { shed: 1, before: 'the opening burst of 10 users' } } });
    expect(v.fits).toBe(false);
    expect(v.line).not.toContain('before the steady window');
    expect(v.line).toContain("the plan says it fits: check the run's 3 shed");
  });
});
