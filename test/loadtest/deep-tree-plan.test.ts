// Plans that hold on a deep two-model tree (test/fixtures/agents/research_pipeline.ts: critics
// on gemini-2.5-pro that call a flash fact checker through an AgentTool, a loop of pro
// writers): each model's calls take their own time (a tool turn answers a short function call),
// every model serves the whole requests each replica's window holds, the headline and the
// fleet figure agree, and a fix names the model and the agents it means.
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelShares } from '../../instrumentation/tree/tree-count.ts';
import { shapeOfCount } from '../../agent/tree-shapes.ts';
import { compareSteadyRun, plannedPerModel } from '../../loadtest/measure/plan-vs-measured.ts';
import { planSteadyPhase, steadyPlanInput } from '../../loadtest/measure/steady-plan.ts';
import type { StackParameters } from '../../loadtest/measure/steady-state.ts';
import { calibrateAgent, countAgent, treePlanInput } from '../../loadtest/planner/agent-plan.ts';
import { inputTokensPerModel, outputTokensPerModel } from '../../loadtest/planner/calibrate.ts';
import { callSecondsFor, latencyOfFullAnswer } from '../../loadtest/planner/call-time.ts';
import { agentsByModel } from '../../loadtest/planner/model-agents.ts';
import { formatModelPlans, planModels } from '../../loadtest/planner/model-plans.ts';
import { plan } from '../../loadtest/planner/plan.ts';
import { shareAdvice } from '../../loadtest/planner/replica-share.ts';
import { formatPlan } from '../../loadtest/planner/format.ts';

const RESEARCH = fileURLToPath(new URL('../fixtures/agents/research_pipeline.ts', import.meta.url));
const FLASH = 'gemini-2.5-flash';
const PRO = 'gemini-2.5-pro';
const OUTPUT = 800;
const CALL_SECONDS = 8;

const stack = (extra: Partial<StackParameters> = {}): StackParameters => ({
  outputTokensPerCall: OUTPUT,
  countedTokens: 'input',
  latencySeconds: CALL_SECONDS,
  quotaRequestsPerMinute: 1000,
  quotaTokensPerMinute: 1_000_000,
  budgetFraction: 0.9,
  replicas: 3,
  ...extra,
});
const phase = { arrival: { kind: 'constant' as const, start: 0, perMinute: 40, duration: 300 }, tree: 'research_pipeline', inputTokensPerCall: 5000 };

describe('a call takes its first token, then its output', () => {
  it('linear in the output: the mean call time is the call time of the mean output; a full answer takes the configured time', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.1, max: 60, noNaN: true }), fc.array(fc.integer({ min: 1, max: 4000 }), { minLength: 1, maxLength: 20 }), (seconds, outputs) => {
        const latency = latencyOfFullAnswer(seconds, OUTPUT);
        expect(callSecondsFor(latency, OUTPUT)).toBeCloseTo(seconds, 9);
        const mean = outputs.reduce((a, b) => a + b, 0) / outputs.length;
        const meanTime = outputs.reduce((a, o) => a + callSecondsFor(latency, o), 0) / outputs.length;
        expect(callSecondsFor(latency, mean)).toBeCloseTo(meanTime, 9);
      }),
    );
  });
});

describe('the deep research pipeline, planned per model', () => {
  it("calibrates each model's output: the pro critics' tool turns answer short, so a pro call takes less than a full answer", async () => {
    const agent = await countAgent(RESEARCH);
    const calibration = await calibrateAgent(agent, { messageTokens: 5000, outputTokensPerCall: OUTPUT });
    const critic = calibration.agents.find((a) => a.agent === 'critic_1');
    expect(critic?.calls).toBe(2);
    // One full answer and one function call of a few tokens.
    expect(critic?.outputTokens).toBeGreaterThan(OUTPUT);
    expect(critic?.outputTokens).toBeLessThan(OUTPUT + 100);
    const output = Object.fromEntries(outputTokensPerModel(calibration));
    expect(output[FLASH]).toBe(OUTPUT);
    // 3 critics × (800 + a short call) + 2 writers × 800 over 8 calls.
    expect(output[PRO]).toBeGreaterThan(0.6 * OUTPUT);
    expect(output[PRO]).toBeLessThan(0.7 * OUTPUT);
    const s = stack({ callLatency: latencyOfFullAnswer(CALL_SECONDS, OUTPUT), outputTokensPerModel: output, inputTokensPerModel: Object.fromEntries(inputTokensPerModel(calibration)) });
    const shape = { parallelBranches: 3, callsPerBranch: 1, sequentialSteps: 5 };
    expect(steadyPlanInput(phase, shape, s, FLASH).latencySeconds).toBeCloseTo(CALL_SECONDS, 9);
    // ≈ 5.3 s: (3 short + 5 full calls) / 8; measured 5.3 s per pro call at the limiter in the run.
    expect(steadyPlanInput(phase, shape, s, PRO).latencySeconds).toBeGreaterThan(5);
    expect(steadyPlanInput(phase, shape, s, PRO).latencySeconds).toBeLessThan(5.8);
    // Without a calibrated output every call takes the configured time, as before.
    expect(steadyPlanInput(phase, shape, stack(), PRO).latencySeconds).toBe(CALL_SECONDS);
  });

  it('every model serves the whole requests the tightest window holds; calls in flight at its own call time', async () => {
    const { tree } = await countAgent(RESEARCH);
    const agents = agentsByModel(tree);
    const tokens: Record<string, number> = { [FLASH]: 5466, [PRO]: 11_495 };
    const seconds: Record<string, number> = { [FLASH]: 8, [PRO]: 5.34 };
    const shares = modelShares(tree).map((s) => ({ ...s, agents: agents[s.model] }));
    const plans = planModels(
      shares,
      shares.map((share) => ({ ...treePlanInput(tree), userRequestsPerMinute: 40, inputTokensPerCall: tokens[share.model], outputTokensPerCall: OUTPUT, latencySeconds: seconds[share.model], quotaRequestsPerMinute: 1000, quotaTokensPerMinute: 1_000_000, replicas: 3 })),
    );
    expect(plans.binding).toBe(PRO);
    const planned = plannedPerModel(plans, 'request', 10);
    // Pro: 9.8 requests/min by its tokens, but 3 whole ones per replica's window: 9, on both models.
    expect(planned.models.get(PRO)?.servedPlanned).toBe(9);
    expect(planned.models.get(FLASH)?.servedPlanned).toBe(9);
    expect(planned.models.get(PRO)?.inFlight).toBeCloseTo((9 * 8 * 5.34) / 60, 9);
    expect(planned.models.get(FLASH)?.inFlight).toBeCloseTo((9 * 10 * 8) / 60, 9);
    // With a forward run of the tree through the door, every model serves what it found (at most the demand).
    const forward = plannedPerModel(plans, 'request', 10, { servedPerMinute: 9.4, minutes: 30, partial: 0 });
    expect(forward.models.get(PRO)?.servedPlanned).toBe(9.4);
    expect(forward.models.get(FLASH)?.servedPlanned).toBe(9.4);
    expect(plannedPerModel(plans, 'request', 10, { servedPerMinute: 55, minutes: 30, partial: 0 }).models.get(PRO)?.servedPlanned).toBe(40);
    // The headline and the fleet figure say the same number.
    const text = formatModelPlans(plans, 'tokens as given');
    expect(text).toMatch(/gemini-2\.5-pro .*sustains 9 user requests\/min \(3 per replica, 9\.8 by its tokens; tokens bind\)/);
    expect(formatPlan(plans.models.find((m) => m.model === PRO)?.plan as never)).toContain('9 sustainable against a demand of 40');
    // The best fix names the model and the agents that call it.
    const best = plans.models.find((m) => m.model === PRO)?.plan.fixes[0]?.summary;
    expect(best).toMatch(/^on gemini-2\.5-pro \(critic_1, critic_2, critic_3, writer\): /);
  });

  it('each agent counts under its own model: an AgentTool\'s agent under the tool\'s model', async () => {
    const { tree } = await countAgent(RESEARCH);
    expect(agentsByModel(tree)).toEqual({
      [FLASH]: ['planner', 'search_1', 'summary_1', 'fact_checker_1', 'search_2', 'summary_2', 'fact_checker_2', 'search_3', 'summary_3', 'fact_checker_3'],
      [PRO]: ['critic_1', 'critic_2', 'critic_3', 'writer'],
    });
  });
});

describe('the per-model headline and the fleet figure agree', () => {
  const input = fc.record({
    calls: fc.integer({ min: 1, max: 20 }),
    width: fc.integer({ min: 1, max: 5 }),
    tokens: fc.integer({ min: 100, max: 50_000 }),
    tpm: fc.integer({ min: 10_000, max: 3_000_000 }),
    replicas: fc.integer({ min: 1, max: 8 }),
  });

  it('the headline prints the fleet’s whole requests; when a request exceeds a replica’s share it suggests central sharing or fewer replicas', () => {
    fc.assert(
      fc.property(input, (i) => {
        const plans = planModels([{ model: 'm', calls: i.calls, width: i.width }], [{
          userRequestsPerMinute: 40,
          inputTokensPerCall: i.tokens,
          outputTokensPerCall: 800,
          latencySeconds: 8,
          quotaRequestsPerMinute: 1e6,
          quotaTokensPerMinute: i.tpm,
          replicas: i.replicas,
        }]);
        const p = plans.models[0].plan;
        const text = formatModelPlans(plans, 'x');
        expect(text).toContain(`sustains ${p.fleet.userRequestsPerMinute} user requests/min`);
        expect(formatPlan(p)).toContain(`${p.fleet.userRequestsPerMinute} sustainable against`);
        const advice = shareAdvice(p);
        const fleetExact = p.perReplica.userRequestsPerMinuteExact * i.replicas;
        // A replica's share holds no whole request while the fleet's budget holds one.
        const exceeds = p.perReplica.userRequestsPerMinute === 0 && fleetExact >= 1 - 1e-9;
        expect(advice !== undefined).toBe(exceeds);
        if (advice) {
          expect(advice.centralUserRequestsPerMinute).toBe(Math.floor(fleetExact + 1e-9));
          expect(advice.replicasUserRequestsPerMinute).toBeLessThanOrEqual(advice.centralUserRequestsPerMinute);
          // Fewer replicas serve something: one replica holds the fleet's budget.
          expect(advice.replicasUserRequestsPerMinute).toBeGreaterThan(0);
          expect(advice.replicas).toBeLessThan(i.replicas);
          expect(text).toContain('share the budget centrally (--quota-sharing central');
          expect(formatPlan(p)).toContain('or run fewer replicas');
        }
      }),
      { numRuns: 200 },
    );
  });

  it("the issue's case: 1.8/min by the tokens but 0 per replica reads 0, with the two ways out", () => {
    const p = plan({ callsPerRequest: 8, userRequestsPerMinute: 40, inputTokensPerCall: 11_000, outputTokensPerCall: 800, latencySeconds: 8, quotaRequestsPerMinute: 1000, quotaTokensPerMinute: 180_000, replicas: 3 });
    expect(p.perReplica.userRequestsPerMinuteExact * 3).toBeCloseTo(1.84, 2);
    const plans = planModels([{ model: PRO, calls: 8, width: 3 }], [{ ...p.input, callsPerRequest: undefined, parallelBranches: undefined }]);
    const line = formatModelPlans(plans, 'x');
    expect(line).not.toMatch(/sustains 1\.8/);
    expect(line).toContain('sustains 0 user requests/min (0 per replica, 1.8 by its tokens; tokens bind)');
    expect(line).toContain("one request (88,000 tokens) needs more than a replica's share (54,000 tokens/min): share the budget centrally (--quota-sharing central: 1/min) or run fewer replicas (1 replica: 1/min)");
  });
});

describe('plan vs measured on the deep tree, with its forward run', () => {
  it("the verdict's sustained rate and every model's served figure are the forward run's", async () => {
    const { tree } = await countAgent(RESEARCH);
    const models = modelShares(tree).map((s) => ({ model: s.model, limiter: s.model.replace(/\./g, '_'), modelCallsPerRequest: s.calls, shape: shapeOfCount(s) }));
    const shape = { ...shapeOfCount(tree), models };
    const window = { start: 0, end: 200_000 };
    const frame = { phase, shape, models, window, before: undefined };
    const forwardRun = { servedPerMinute: 9.4, minutes: 30, partial: 0 };
    const steadyStack = stack({ inputTokensPerModel: { [FLASH]: 5466, [PRO]: 11_495 }, permits: 10, admission: 'request', forwardRun });
    const byModel = new Map(models.map((m) => [m.model, { okCallsPerMinute: 60, okCallsPerMinuteByAgent: new Map([['writer', 10]]), callsInFlight: 6 }]));
    // The door admitted 32 in the 200 s window, one of them ended partial; 90 shed.
    const requests = { served: 31, shed: 90, partial: 1 };
    const run = { ...frame, probed: undefined, steadyRequests: { shed: 90, before: undefined }, figures: { kind: 'models' as const, models, byModel, requests, seconds: 200 } };
    const planned = planSteadyPhase(phase, shape, models, steadyStack);
    const compared = compareSteadyRun(run, steadyStack, undefined, planned);
    expect(compared.planned.sustainedUserRequestsPerMinute).toBe(9.4);
    expect(compared.forwardRun).toEqual(forwardRun);
    // Whole requests at the door: one served row for the tree, then each model's calls in flight.
    expect(compared.rows.map((r) => r.quantity)).toEqual([
      'served requests/min',
      'shed requests/min',
      'partial requests/min',
      `calls in flight ${FLASH}`,
      `calls in flight ${PRO}`,
    ]);
    const row = (quantity: string) => compared.rows.find((r) => r.quantity === quantity);
    expect(row('served requests/min')).toMatchObject({ planned: 9.4, measured: 9.3 });
    expect(row('shed requests/min')?.measured).toBe(27);
    expect(row('partial requests/min')).toMatchObject({ planned: 0, measured: 0.3 });
    // Without one, the arithmetic: the tokens' exact share in the verdict, whole windows in the rows.
    const arithmetic = compareSteadyRun(run, { ...steadyStack, forwardRun: undefined }, undefined, planSteadyPhase(phase, shape, models, { ...steadyStack, forwardRun: undefined }));
    expect(arithmetic.planned.sustainedUserRequestsPerMinute).toBeCloseTo(9.79, 2);
    expect(arithmetic.rows.find((r) => r.quantity === 'served requests/min')?.planned).toBe(9);
    // Call by call each model serves its own share: a row of its own, in whole-request equivalents of its calls.
    const perCall = { ...steadyStack, admission: 'call' as const, forwardRun: undefined };
    const byCall = compareSteadyRun({ ...run, figures: { kind: 'models', models, byModel, seconds: 200 } }, perCall, undefined, planSteadyPhase(phase, shape, models, perCall));
    expect(byCall.rows.map((r) => r.quantity).filter((q) => q.startsWith('user requests/min'))).toEqual([`user requests/min ${FLASH}`, `user requests/min ${PRO}`]);
    expect(arithmetic.forwardRun).toBeUndefined();
  });
});
