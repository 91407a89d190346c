// A tree that calls two models is planned per model, each against its own quota, with each
// agent's input tokens measured from one request through the tree (session history included);
// `--input-tokens` overrides the calibration; `--json` prints JSON alone on stdout.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { SequentialAgent } from '@google/adk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadAgentModule } from '../../agent/agent-module.ts';
import { countModelCalls, modelShares } from '../../instrumentation/tree/tree-count.ts';
import { walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { calibrateAgent, countAgent } from '../../loadtest/planner/agent-plan.ts';
import { planModels } from '../../loadtest/planner/model-plans.ts';
import { plan } from '../../loadtest/planner/plan.ts';
import { QUOTASCOPE_BIN } from '../../loadtest/stack/quotascope-bin.ts';

const run = promisify(execFile);
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/agents/${name}`, import.meta.url));
const TRIP = fixture('trip_planner.ts');
const FLASH = 'gemini-2.5-flash';
const PRO = 'gemini-2.5-pro';
const TRAFFIC = ['--users-per-minute', '40', '--output-tokens', '800', '--latency', '8', '--quota-rpm', '1000', '--replicas', '3', '--budget-fraction', '0.9'];

async function planJson(argv: string[]) {
  const { stdout } = await run(process.execPath, [QUOTASCOPE_BIN, 'plan', '--json', ...argv]);
  return JSON.parse(stdout);
}

describe('per-model counts', () => {
  it('splits the calls and the width of each model; the shares add up to the tree', async () => {
    for (const name of ['trip_planner.ts', 'loop_tools.ts', 'workflow_graph.ts']) {
      const { root } = await loadAgentModule(fixture(name));
      const tree = countModelCalls(walkAgentTree(root), { toolTurns: 1 });
      const shares = modelShares(tree);
      expect(shares.reduce((sum, s) => sum + s.calls, 0), name).toBe(tree.calls);
      for (const s of shares) expect(s.width, name).toBeLessThanOrEqual(tree.width);
    }
    const { tree } = await countAgent(TRIP);
    expect(modelShares(tree)).toEqual([
      { model: PRO, calls: 5, width: 3 },
      { model: FLASH, calls: 3, width: 1 },
    ]);
  });
});

describe('planModels', () => {
  it('plans each share alone and binds on the model that sustains the fewest user requests', () => {
    const share = fc.record({ calls: fc.integer({ min: 1, max: 20 }), width: fc.integer({ min: 1, max: 20 }), tpm: fc.integer({ min: 10_000, max: 5_000_000 }) });
    fc.assert(
      fc.property(fc.array(share, { minLength: 1, maxLength: 4 }), fc.integer({ min: 100, max: 20_000 }), (shares, tokens) => {
        const named = shares.map((s, i) => ({ model: `m${i}`, calls: s.calls, width: s.width }));
        const base = { userRequestsPerMinute: 40, inputTokensPerCall: tokens, outputTokensPerCall: 800, latencySeconds: 8, quotaRequestsPerMinute: 1e6 };
        const plans = planModels(named, named.map((s) => ({ ...base, quotaTokensPerMinute: shares[Number(s.model.slice(1))].tpm })));
        const lowest = Math.min(...plans.models.map((m) => m.sustainedUserRequestsPerMinute));
        expect(plans.models.find((m) => m.model === plans.binding)?.sustainedUserRequestsPerMinute).toBe(lowest);
        for (const [i, m] of plans.models.entries()) {
          const alone = plan({ ...base, quotaTokensPerMinute: shares[i].tpm, callsPerRequest: shares[i].calls, parallelBranches: Math.min(shares[i].width, shares[i].calls), callsPerBranch: 1, sequentialSteps: shares[i].calls - Math.min(shares[i].width, shares[i].calls) });
          expect(m.sustainedUserRequestsPerMinute).toBeCloseTo(alone.perReplica.userRequestsPerMinuteExact, 9);
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe('calibration', () => {
  it("measures each agent's input tokens with the session history ADK builds", async () => {
    const agent = await countAgent(TRIP);
    const calibration = await calibrateAgent(agent, { messageTokens: 5000, outputTokensPerCall: 800 });
    const perCall = Object.fromEntries(calibration.agents.map((a) => [a.agent, a.inputTokens / a.calls]));
    expect(calibration.agents.find((a) => a.agent === 'itinerary_draft')?.calls).toBe(2);
    // The researchers read the router's answers; the drafts and the summary the researchers' too.
    expect(perCall.flights_researcher).toBeGreaterThan(perCall.router);
    expect(perCall.itinerary_draft).toBeGreaterThan(perCall.flights_researcher + 2 * 800);
    expect(perCall.summary).toBeGreaterThan(perCall.flights_researcher + 2 * 800);
    // The models are given back afterwards.
    expect((agent.module.root as SequentialAgent).subAgents[0]).toMatchObject({ model: FLASH });
  });
});

describe('plan --agent per model', () => {
  it('plans each model against its own quota, prints the binding one, and says the tokens were calibrated', async () => {
    const result = await planJson(['--agent', TRIP, ...TRAFFIC, '--quota-tpm', `${PRO}=1000000,${FLASH}=1000000`]);
    expect(result.models.binding).toBe(PRO);
    const byModel = Object.fromEntries(result.models.models.map((m: { model: string }) => [m.model, m]));
    expect(byModel[PRO].plan.tree.callsPerRequest).toBe(5);
    expect(byModel[FLASH].plan.tree.callsPerRequest).toBe(3);
    // The pro calls carry the loop's history: well above the 5,000-token message.
    expect(byModel[PRO].plan.demand.tokensPerCall).toBeGreaterThan(7000);
    expect(result.plan.tree.callsPerRequest).toBe(5);
    expect(result.calibration.agents.length).toBe(6);
    const { stdout } = await run(process.execPath, [QUOTASCOPE_BIN, 'plan', '--agent', TRIP, ...TRAFFIC, '--quota-tpm', `${PRO}=500000,1000000`]);
    expect(stdout).toMatch(/gemini-2\.5-pro .*quota 500,000 tokens\/min: sustains [\d.]+ user requests\/min .*← binds/);
    expect(stdout).toContain('input tokens per call calibrated from one request with session history');
    expect(stdout).toContain('Binding model gemini-2.5-pro');
  });

  it('--input-tokens overrides the calibration', async () => {
    const result = await planJson(['--agent', TRIP, ...TRAFFIC, '--quota-tpm', '1000000', '--input-tokens', '5000']);
    expect(result.calibration).toBeUndefined();
    for (const m of result.models.models) expect(m.plan.demand.tokensPerCall).toBe(5000);
  });

  it('prints JSON alone on stdout, whatever the module writes while it loads', async () => {
    const { stdout, stderr } = await run(process.execPath, [QUOTASCOPE_BIN, 'plan', '--json', '--agent', fixture('noisy_import.ts')]);
    expect(JSON.parse(stdout)).toMatchObject({ callsPerRequest: 1 });
    expect(stderr).toContain('WARN: [ADK]');
  });
});
