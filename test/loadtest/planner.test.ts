// The capacity planner: the worked example pinned figure by figure, the edge cases
// (bad input, requests binding, one replica), invariants of the fixes, and the CLI as a process.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatPlan, PlanInputError, plan, planInputIssues, reviewAgentExample } from '../../loadtest/planner/index.ts';
import type { PlanInput } from '../../loadtest/planner/index.ts';

const bin = fileURLToPath(new URL('../../cli/quotascope.ts', import.meta.url));
const run = promisify(execFile);

async function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, 'plan', ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the worked example (review agent)', () => {
  const p = plan(reviewAgentExample);

  it('counts 4 parallel reviewers + 1 synthesizer as 5 calls per user request', () => {
    expect(p.tree).toMatchObject({ callsPerRequest: 5, parallelBranches: 4, sequentialSteps: 1, source: 'counted' });
  });

  it('demands 200 calls/min and 1.16 M tokens/min: tokens bind, requests do not', () => {
    expect(p.demand.callsPerMinute).toBe(200);
    expect(p.demand.tokensPerCall).toBe(5800);
    expect(p.demand.tokensPerMinute).toBe(1_160_000);
    expect(p.quotaUse.requests).toBeCloseTo(0.2, 10);
    expect(p.quotaUse.tokens).toBeCloseTo(1.16, 10);
    expect(p.binding.axis).toBe('tokens');
    expect(p.binding.overQuota).toBe(true);
    expect(p.binding.overBy).toBeCloseTo(0.16, 10);
  });

  it("has 3.3 calls/s and about 27 calls in flight by Little's law", () => {
    expect(p.demand.callsPerSecond.toFixed(1)).toBe('3.3');
    expect(Math.round(p.inFlight.fleet)).toBe(27);
  });

  it('gives each of 3 replicas 300 k tokens/min, about 51 calls/min and 10 user requests/min', () => {
    expect(p.budget.fleetTokensPerMinute).toBeCloseTo(900_000, 6);
    expect(p.perReplica.tokensPerMinute).toBeCloseTo(300_000, 6);
    expect(p.perReplica.requestsPerMinute).toBeCloseTo(300, 6);
    expect(Math.floor(p.perReplica.callsPerMinute)).toBe(51);
    expect(p.perReplica.userRequestsPerMinute).toBe(10);
  });

  it('sustains 30 user requests/min for the fleet against a demand of 40', () => {
    expect(p.fleet.userRequestsPerMinute).toBe(30);
    expect(p.demand.userRequestsPerMinute).toBe(40);
    expect(p.fleet.shortfallUserRequestsPerMinute).toBe(10);
    expect(p.fleet.shortfallFraction).toBeCloseTo(0.25, 10);
  });

  it('has about 7 calls in flight per replica, 10 permits and maxWait 20 s', () => {
    expect(Math.round(p.inFlight.perReplica)).toBe(7);
    expect(p.perReplica.permits).toBe(10);
    expect(p.perReplica.maxWaitSeconds).toBe(20);
  });

  it('shapes a burst of 10 users as 40 calls at t=0, then 10 synthesizer calls one latency later', () => {
    expect(p.burst.waves).toEqual([
      { atSeconds: 0, calls: 40, kind: 'fan-out' },
      { atSeconds: 8, calls: 10, kind: 'sequential' },
    ]);
    expect(p.burst.busiestReplicaCallsAtStart).toBe(16); // 4 of the 10 users land on one replica
    expect(p.burst.queuedAtStart).toBe(6);
    expect(p.burst.queuedWaitSeconds).toBe(8);
    expect(p.burst.withinMaxWait).toBe(true);
  });

  it('predicts when a sustained peak starts timing out', () => {
    // 200 − 3 × 51.7 = 44.8 calls/min above the budget; the queue reaches 20 s after ≈69 s.
    expect(p.overload.excessCallsPerMinute).toBeCloseTo(200 - (3 * 900_000) / 3 / 5800, 6);
    expect(Math.round(p.overload.secondsUntilMaxWait ?? 0)).toBe(69);
  });

  it('ranks the fixes: shorter prompts, quota, smaller model, fewer branches', () => {
    expect(p.fixes.map((fix) => fix.kind)).toEqual(['shorter-prompts', 'quota', 'smaller-model', 'fewer-branches']);
    const byKind = Object.fromEntries(p.fixes.map((fix) => [fix.kind, fix]));
    expect(byKind['shorter-prompts'].inputChange).toEqual({ inputTokensPerCall: 3485 });
    expect(byKind['fewer-branches'].inputChange).toEqual({ parallelBranches: 2, callsPerRequest: 3 });
    expect(byKind['smaller-model'].summary).toContain('move 2 of 5 calls');
    expect(byKind.quota.inputChange?.quotaTokensPerMinute).toBeGreaterThan(1_160_000 / 0.9);
  });

  it('prints the figures in the table', () => {
    const text = formatPlan(p);
    for (const figure of [
      '200 calls/min',
      '1.16 M tokens/min',
      'tokens bind',
      '3.3 calls/s',
      '≈27 across the fleet',
      '300 k',
      '≈51',
      '30 sustainable against a demand of 40',
      '≈7',
      'permits                10',
      '20 s',
      '40 calls (fan-out)',
      '10 calls (sequential)',
    ]) {
      expect(text).toContain(figure);
    }
  });
});

describe('edge cases', () => {
  it.each([
    ['userRequestsPerMinute', 0],
    ['userRequestsPerMinute', -5],
    ['inputTokensPerCall', 0],
    ['latencySeconds', -1],
    ['quotaRequestsPerMinute', 0],
    ['quotaTokensPerMinute', -1],
    ['replicas', 0],
    ['replicas', 1.5],
    ['parallelBranches', 0],
    ['budgetFraction', 1.2],
    ['budgetFraction', 0],
    ['outputTokensPerCall', -1],
    ['sequentialSteps', -1],
    ['toleratedWaitSeconds', 0],
  ] as const)('rejects %s = %s with an error naming the field', (field, value) => {
    const call = () => plan({ ...reviewAgentExample, [field]: value });
    expect(call).toThrow(PlanInputError);
    expect(call).toThrow(new RegExp(`^${field}: `));
  });

  it('lists every issue in field order', () => {
    const issues = planInputIssues({ ...reviewAgentExample, replicas: 0, latencySeconds: -1 });
    expect(issues.map((issue) => issue.field)).toEqual(['latencySeconds', 'replicas']);
  });

  it('names the missing field and rejects unknown fields', () => {
    const { userRequestsPerMinute: _, ...withoutDemand } = reviewAgentExample;
    expect(() => plan(withoutDemand as PlanInput)).toThrow(/^userRequestsPerMinute: user requests per minute is required/);
    expect(() => plan({ ...reviewAgentExample, replica: 3 } as PlanInput)).toThrow(/^replica: unknown input field/);
  });

  it('needs a call count or a tree, and a count that agrees with the tree', () => {
    const { parallelBranches: _, ...noTree } = reviewAgentExample;
    expect(() => plan(noTree)).toThrow(/^callsPerRequest: give the calls per request/);
    expect(() => plan({ ...reviewAgentExample, callsPerRequest: 6 })).toThrow(/disagrees with the tree/);
    expect(plan({ ...reviewAgentExample, callsPerRequest: 5 }).tree.callsPerRequest).toBe(5);
  });

  it('an input-counted quota (Gemini) charges no output: 5,000 per call, 60 calls/min per replica', () => {
    const p = plan({ ...reviewAgentExample, countedTokens: 'input' });
    expect(p.demand.tokensPerCall).toBe(5000);
    expect(p.demand.tokensPerMinute).toBe(1_000_000);
    expect(p.perReplica.callsPerMinute).toBeCloseTo(60, 10);
    expect(p.perReplica.userRequestsPerMinute).toBe(12);
    expect(p.burst.busiestReplicaTokensAtStart).toBe(16 * 5000);
    expect(plan({ ...reviewAgentExample, countedTokens: undefined }).input.countedTokens).toBe('input'); // the default
  });

  it("a step reading the branches' outputs costs more, and less when branches were shed", () => {
    // The synthesizer's prompt carries 4 reviews twice (instruction placeholders + session history).
    const p = plan({ ...reviewAgentExample, countedTokens: 'input', branchOutputsPerStep: 2 });
    expect(p.demand.tokensPerCall).toBeCloseTo((4 * 5000 + 11_400) / 5, 10);
    expect(p.perReplica.userRequestsPerMinuteExact).toBeCloseTo(300_000 / 31_400, 10);
    // Overloaded: 40/min against ~28.7 whole requests. A share g of the calls completes, with
    // synthesizers carrying 4g reviews: 40 g (5 × 5,000 + 2 × 4 × 800 g) = 900 k, g ≈ 0.754.
    const g = (-1_000_000 + Math.sqrt(1_000_000 ** 2 + 4 * 256_000 * 900_000)) / (2 * 256_000);
    expect(p.overload.completedShare).toBeCloseTo(g, 10);
    expect(p.overload.servedUserRequestsPerMinute).toBeCloseTo(40 * g, 10);
    expect(p.overload.servedUserRequestsPerMinute).toBeGreaterThan(p.fleet.userRequestsPerMinute);
    // Without outputs in the steps, shedding changes nothing: served = what the budget sustains.
    const plain = plan(reviewAgentExample);
    expect(plain.overload.servedUserRequestsPerMinute).toBeCloseTo(plain.perReplica.userRequestsPerMinuteExact * 3, 10);
    expect(plan({ ...reviewAgentExample, userRequestsPerMinute: 20 }).overload.completedShare).toBe(1);
    expect(() => plan({ ...reviewAgentExample, branchOutputsPerStep: -1 })).toThrow(/^branchOutputsPerStep: /);
    expect(() => plan({ ...reviewAgentExample, countedTokens: 'output' as 'input' })).toThrow(/^countedTokens: counted tokens must be input or total/);
  });

  it('reports requests binding when calls are many and small', () => {
    // 40 users × 5 calls = 200 calls/min against 150 RPM, tokens nowhere near their quota.
    const p = plan({ ...reviewAgentExample, inputTokensPerCall: 100, outputTokensPerCall: 20, quotaRequestsPerMinute: 150 });
    expect(p.binding.axis).toBe('requests');
    expect(p.binding.quotaUse).toBeCloseTo(200 / 150, 10);
    expect(p.perReplica.callsPerMinute).toBeCloseTo(45, 10); // 150 × 0.9 / 3
    expect(p.perReplica.userRequestsPerMinute).toBe(9);
    expect(p.fleet.userRequestsPerMinute).toBe(27);
    const prompts = p.fixes.find((fix) => fix.kind === 'shorter-prompts');
    expect(prompts?.feasible).toBe(false);
    expect(p.fixes.at(-1)?.kind).toBe('shorter-prompts');
    expect(p.fixes.find((fix) => fix.kind === 'quota')?.inputChange?.quotaRequestsPerMinute).toBeGreaterThan(150);
  });

  it('plans one replica with the whole budget', () => {
    const p = plan({ ...reviewAgentExample, replicas: 1 });
    expect(p.perReplica.tokensPerMinute).toBeCloseTo(900_000, 6);
    expect(Math.floor(p.perReplica.callsPerMinute)).toBe(155);
    expect(p.perReplica.userRequestsPerMinute).toBe(31);
    expect(p.fleet.userRequestsPerMinute).toBe(31);
    expect(p.fleet.shortfallUserRequestsPerMinute).toBe(9);
    expect(Math.round(p.inFlight.perReplica)).toBe(21);
    expect(p.perReplica.permits).toBe(25);
    expect(p.burst.busiestReplicaCallsAtStart).toBe(40);
  });

  it('has no shortfall and no fixes when the demand fits', () => {
    const p = plan({ ...reviewAgentExample, userRequestsPerMinute: 20 });
    expect(p.binding.overQuota).toBe(false);
    expect(p.fleet.shortfallUserRequestsPerMinute).toBe(0);
    expect(p.overload.secondsUntilMaxWait).toBeNull();
    expect(p.fixes).toEqual([]);
    expect(Math.round(p.inFlight.perReplica * 10) / 10).toBeCloseTo((100 / 3 / 60) * 8, 1);
  });

  it('flags a burst that queues beyond maxWait or overruns the budget', () => {
    // 100 users on 3 replicas: 34 × 4 = 136 calls on the busiest replica against 10 permits.
    const p = plan({ ...reviewAgentExample, burstUsers: 100 });
    expect(p.burst.busiestReplicaCallsAtStart).toBe(136);
    expect(p.burst.queuedWaitSeconds).toBe(13 * 8);
    expect(p.burst.withinMaxWait).toBe(false);
    expect(p.burst.tokensFitBudget).toBe(false); // 136 × 5,800 = 788,800 > 300 k
    const text = formatPlan(p);
    expect(text).toContain('BEYOND maxWait');
    expect(text).toContain('DOES NOT fit');
  });

  it('takes a bare call count as one fan-out for the burst', () => {
    const p = plan({ ...reviewAgentExample, parallelBranches: undefined, callsPerRequest: 5 });
    expect(p.tree).toMatchObject({ source: 'assumed', parallelBranches: 5, sequentialSteps: 0 });
    expect(p.burst.waves).toEqual([{ atSeconds: 0, calls: 50, kind: 'fan-out' }]);
  });
});

const arbitraryInput = fc.record({
  parallelBranches: fc.integer({ min: 1, max: 12 }),
  callsPerBranch: fc.integer({ min: 1, max: 3 }),
  sequentialSteps: fc.integer({ min: 0, max: 3 }),
  userRequestsPerMinute: fc.integer({ min: 1, max: 500 }),
  inputTokensPerCall: fc.integer({ min: 1, max: 50_000 }),
  outputTokensPerCall: fc.integer({ min: 0, max: 5_000 }),
  latencySeconds: fc.double({ min: 0.1, max: 60, noNaN: true }),
  quotaRequestsPerMinute: fc.integer({ min: 1, max: 20_000 }),
  quotaTokensPerMinute: fc.integer({ min: 1_000, max: 20_000_000 }),
  budgetFraction: fc.double({ min: 0.1, max: 1, noNaN: true }),
  replicas: fc.integer({ min: 1, max: 10 }),
});

describe('invariants', () => {
  it('never promises more than the budget, and permits admit whole fan-outs', () => {
    fc.assert(
      fc.property(arbitraryInput, (input) => {
        const p = plan(input);
        const fleetCalls = p.fleet.userRequestsPerMinute * p.tree.callsPerRequest;
        expect(fleetCalls * p.demand.tokensPerCall).toBeLessThanOrEqual(p.budget.fleetTokensPerMinute * (1 + 1e-9));
        expect(fleetCalls).toBeLessThanOrEqual(p.budget.fleetRequestsPerMinute * (1 + 1e-9));
        expect(p.fleet.userRequestsPerMinute + p.fleet.shortfallUserRequestsPerMinute).toBeGreaterThanOrEqual(
          p.demand.userRequestsPerMinute,
        );
        expect(p.perReplica.permits).toBeGreaterThanOrEqual(p.inFlight.perReplica);
        expect(p.perReplica.permits).toBeGreaterThanOrEqual(p.tree.parallelBranches);
        expect(p.perReplica.permits % p.tree.callsPerRequest).toBe(0);
        expect(p.fixes.length > 0).toBe(p.fleet.shortfallUserRequestsPerMinute > 0);
      }),
      { numRuns: 300 },
    );
  });

  it('request admission: served is the whole requests the budget holds, shed = demand − served, none partial', () => {
    fc.assert(
      fc.property(arbitraryInput, (input) => {
        const p = plan(input);
        const a = p.admission;
        // Each replica's window holds a whole number of requests.
        const sustained = Math.floor(p.perReplica.userRequestsPerMinuteExact + 1e-9) * p.fleet.replicas;
        expect(a.servedUserRequestsPerMinute).toBeCloseTo(Math.min(p.demand.userRequestsPerMinute, sustained), 9);
        expect(a.servedUserRequestsPerMinute + a.shedUserRequestsPerMinute).toBeCloseTo(p.demand.userRequestsPerMinute, 9);
        expect(a.shedUserRequestsPerMinute).toBeGreaterThanOrEqual(0);
        expect(a.partialUserRequestsPerMinute).toBe(0);
        // Served whole, the fleet's counted tokens stay within its budget.
        expect(a.servedUserRequestsPerMinute * p.tree.callsPerRequest * p.demand.tokensPerCall).toBeLessThanOrEqual(p.budget.fleetTokensPerMinute * (1 + 1e-9));
      }),
      { numRuns: 300 },
    );
  });

  it('every feasible fix, applied, closes the shortfall', () => {
    fc.assert(
      fc.property(arbitraryInput, (input) => {
        const p = plan(input);
        for (const fix of p.fixes) {
          if (!fix.feasible || !fix.inputChange) continue;
          const fixed = plan({ ...input, ...fix.inputChange });
          expect(fixed.fleet.shortfallUserRequestsPerMinute, fix.summary).toBe(0);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('sizes shorter prompts and fewer branches to the smallest change that works', () => {
    fc.assert(
      fc.property(arbitraryInput, (input) => {
        const p = plan(input);
        const prompts = p.fixes.find((fix) => fix.kind === 'shorter-prompts' && fix.feasible);
        const promptTokens = prompts?.inputChange?.inputTokensPerCall;
        if (promptTokens !== undefined) {
          const oneMore = plan({ ...input, inputTokensPerCall: promptTokens + 1 });
          expect(oneMore.fleet.shortfallUserRequestsPerMinute).toBeGreaterThan(0);
        }
        const branches = p.fixes.find((fix) => fix.kind === 'fewer-branches' && fix.feasible)?.inputChange?.parallelBranches;
        if (branches !== undefined) {
          const oneMore = plan({ ...input, parallelBranches: branches + 1 });
          expect(oneMore.fleet.shortfallUserRequestsPerMinute).toBeGreaterThan(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('the CLI as a process', () => {
  it('prints the worked example as a table', async () => {
    const { code, stdout } = await runCli(['--example', 'review-agent']);
    expect(code).toBe(0);
    expect(stdout).toContain('200 calls/min (3.3 calls/s)');
    expect(stdout).toContain('1.16 M tokens/min');
    expect(stdout).toContain('30 sustainable against a demand of 40');
    // Request admission: the whole requests each replica's budget holds served whole, the rest shed, none partial.
    expect(stdout).toMatch(/^ {2}served +30 user requests\/min \(the whole requests the budget holds, every branch answered\)$/m);
    expect(stdout).toMatch(/^ {2}shed +10 user requests\/min \(25 % of the demand: answered 429 at once, before any model call\)$/m);
    expect(stdout).toMatch(/^ {2}partial +≈0 /m);
  });

  it('gives the same numbers as JSON fields, and flags override the example', async () => {
    const { code, stdout } = await runCli(['--example', 'review-agent', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual(JSON.parse(JSON.stringify(plan(reviewAgentExample))));
    const oneReplica = JSON.parse((await runCli(['--example=review-agent', '--replicas', '1', '--json'])).stdout);
    expect(oneReplica.perReplica.permits).toBe(25);
    expect(oneReplica.fleet.userRequestsPerMinute).toBe(31);
  });

  it('plans from flags alone, counting the tree', async () => {
    const args = ['--branches', '3', '--sequential-steps', '2', '--users-per-minute', '10', '--input-tokens', '1000'];
    args.push('--output-tokens', '100', '--latency', '2', '--quota-rpm', '500', '--quota-tpm', '400000', '--json');
    const { code, stdout } = await runCli(args);
    expect(code).toBe(0);
    const p = JSON.parse(stdout);
    expect(p.tree.callsPerRequest).toBe(5);
    expect(p.demand.callsPerMinute).toBe(50);
    expect(p.input.replicas).toBe(1);
  });

  it.each([
    [['--example', 'review-agent', '--replicas', '0'], '--replicas'],
    [['--example', 'review-agent', '--users-per-minute', '-3'], '--users-per-minute'],
    [['--example', 'review-agent', '--latency', 'soon'], '--latency'],
    [['--example', 'review-agent', '--budget-fraction', '1.5'], '--budget-fraction'],
    [['--example', 'review-agent', '--replicas'], '--replicas'],
    [['--example', 'review-agent', '--colour'], '--colour'],
    [['--example', 'nope'], '--example'],
    [['--branches', '4', '--users-per-minute', '40'], '--input-tokens'],
    [['--example', 'review-agent', '--tree', '0x1'], '--tree'],
    [['--example', 'review-agent', '--tree', 'four'], '--tree'],
    [['--example', 'review-agent', '--tree', '4x1+1', '--branches', '3'], '--tree'],
    // A bad value typed is reported before the flags left out.
    [['--replicas', '0'], '--replicas'],
  ])('exits 2 with one line naming the flag: %j', async (args, flag) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(new RegExp(`^plan: ${flag}: `));
  });

  it('takes the tree in one flag: --tree 8x1+1 is 8 branches × 1 call + 1 step', async () => {
    const { code, stdout } = await runCli(['--example', 'review-agent', '--tree', '8x1+1', '--json']);
    expect(code).toBe(0);
    const p = JSON.parse(stdout);
    expect(p.tree).toMatchObject({ parallelBranches: 8, callsPerBranch: 1, sequentialSteps: 1, callsPerRequest: 9 });
    expect(p.demand.callsPerMinute).toBe(360);
  });

  it('prints usage with --help', async () => {
    const { code, stdout } = await runCli(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('--quota-tpm');
  });
});
