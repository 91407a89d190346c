// Traffic-class lanes end to end: the real agent service, ADK trees and mock provider. Batch
// requests fill the queue first, then an interactive request arrives; with the batch lane
// capped at 2 of 4 permits, batch never holds more than 2 and the interactive request is
// served while batch calls are still queued. The same load with lanes off shows the
// starvation the cap prevents.
import { type BaseLlmConnection, BaseLlm, type LlmRequest, type LlmResponse } from '@google/adk';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentConfigError, batchLanePermits, parseServiceOptions } from '../../agent/config.ts';
import { parseCliConfig } from '../../cli/agent.ts';
import { ProviderGemini } from '../../agent/provider-model.ts';
import { currentTrafficClass } from '../../agent/run-context.ts';
import { fastMock, type RunResponse, type Stack, startStack } from './stack.ts';

const CALL_MS = 150;
const BATCH_REQUESTS = 4; // × 4 reviewers = 16 calls queued before the interactive request

/**
 * The real provider model (ProviderGemini → mock) with a probe around it: counts the calls
 * in flight at the provider per traffic class, read from the request's run context (the
 * delegate runs inside the model call's async context).
 */
class LaneProbeModel extends BaseLlm {
  target: ProviderGemini | undefined;
  readonly inFlight = new Map<string, number>();
  readonly peak = new Map<string, number>();

  constructor() {
    super({ model: 'gemini-2.5-flash' });
  }

  override async *generateContentAsync(request: LlmRequest, stream = false, signal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    if (!this.target) throw new Error('LaneProbeModel: no target yet');
    const lane = currentTrafficClass() ?? 'none';
    const now = (this.inFlight.get(lane) ?? 0) + 1;
    this.inFlight.set(lane, now);
    this.peak.set(lane, Math.max(this.peak.get(lane) ?? 0, now));
    try {
      yield* this.target.generateContentAsync(request, stream, signal);
    } finally {
      this.inFlight.set(lane, (this.inFlight.get(lane) ?? 1) - 1);
    }
  }

  override connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error('not supported'));
  }
}

async function until(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface Outcome {
  batchPeak: number;
  interactive: RunResponse;
  /** Batch requests still unanswered when the interactive answer arrived. */
  batchPendingAtInteractive: number;
  batch: { status: number; body: RunResponse }[];
  health: { limiter: { batchLane?: { maxPermits: number; permitsInUse: number } } };
}

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function runLoad(batchMaxPermits: number | 'off'): Promise<Outcome> {
  const probe = new LaneProbeModel();
  stack = await startStack(fastMock(CALL_MS), { permits: 4, batchMaxPermits, estimatedTokensPerCall: 200, maxWaitMs: 10_000 }, probe);
  probe.target = new ProviderGemini({ providerUrl: stack.probe.url, apiKey: 'k', model: 'gemini-2.5-flash', httpTimeoutMs: 10_000 });
  const s = stack;
  const health = (await (await fetch(`${s.agent.url}/healthz`)).json()) as Outcome['health'];
  // A warm limiter: what is measured is the lanes, not the cold start (its learner holds the door until its request ends).
  expect((await s.run('review', { document: 'warm-up', trafficClass: 'interactive', userId: 'w' })).status).toBe(200);
  let batchDone = 0;
  const batch = Array.from({ length: BATCH_REQUESTS }, (_, i) =>
    s.run('review', { document: `batch document ${i}`, trafficClass: 'batch', userId: `b${i}` }).then((r) => {
      batchDone++;
      return r;
    }),
  );
  // Every batch reviewer call is in the limiter (held or queued) before the interactive user arrives.
  const semaphore = s.agent.limiter.model.semaphore;
  await until(() => semaphore.inUse + semaphore.waiting >= BATCH_REQUESTS * 4);
  const interactive = await s.run('review', { document: 'interactive document', trafficClass: 'interactive', userId: 'i1' });
  const batchPendingAtInteractive = BATCH_REQUESTS - batchDone;
  const batchResults = await Promise.all(batch);
  expect(interactive.status).toBe(200);
  return { batchPeak: probe.peak.get('batch') ?? 0, interactive: interactive.body, batchPendingAtInteractive, batch: batchResults, health };
}

describe('traffic-class lanes in the agent service', () => {
  it('batch capped at 2 of 4 permits: never more than 2 batch calls at the provider, interactive served ahead of queued batch', async () => {
    const on = await runLoad(2);
    expect(on.health.limiter.batchLane).toEqual({ maxPermits: 2, permitsInUse: 0 });
    expect(on.batchPeak).toBe(2);
    expect(on.batch.every((r) => r.status === 200 && r.body.missingBranches.length === 0)).toBe(true);
    expect(on.interactive.missingBranches).toEqual([]);
    expect(on.batchPendingAtInteractive).toBeGreaterThan(0);
    await stack?.close();
    stack = undefined;

    // The same load with lanes off: batch takes every permit and the interactive request queues behind it.
    const off = await runLoad('off');
    expect(off.health.limiter.batchLane).toBeUndefined();
    expect(off.batchPeak).toBe(4);
    // 16 batch calls ahead of it on 4 permits: at least 3 full rounds of waiting.
    expect(off.interactive.permitWaitMs).toBeGreaterThanOrEqual(3 * CALL_MS);
    expect(on.interactive.permitWaitMs).toBeLessThan(off.interactive.permitWaitMs);
  }, 15_000);
});

describe('--batch-max-permits', () => {
  it('defaults to half the permits (min 1); off or = permits disables; validated by name', () => {
    expect(batchLanePermits(parseServiceOptions({ permits: 10 }))).toBe(5);
    expect(batchLanePermits(parseServiceOptions({ permits: 3 }))).toBe(1);
    expect(batchLanePermits(parseServiceOptions({ permits: 1 }))).toBeUndefined(); // half rounds to 1 = permits
    expect(batchLanePermits(parseServiceOptions({ permits: 4, batchMaxPermits: 4 }))).toBeUndefined();
    expect(batchLanePermits(parseServiceOptions({ permits: 4, batchMaxPermits: 'off' }))).toBeUndefined();

    const fromFlag = parseCliConfig(['--permits', '8', '--batch-max-permits', '3'], {});
    expect(fromFlag !== 'help' && batchLanePermits(fromFlag.service)).toBe(3);
    const fromEnv = parseCliConfig([], { QUOTASCOPE_AGENT_BATCH_MAX_PERMITS: 'off' });
    expect(fromEnv !== 'help' && fromEnv.service.batchMaxPermits).toBe('off');

    expect(() => parseCliConfig(['--batch-max-permits', 'half'], {})).toThrow(/--batch-max-permits/);
    expect(() => parseCliConfig(['--permits', '4', '--batch-max-permits', '5'], {})).toThrow(/--batch-max-permits: must be <= permits \(4\)/);
    expect(() => parseCliConfig([], { QUOTASCOPE_AGENT_BATCH_MAX_PERMITS: '0' })).toThrow(/QUOTASCOPE_AGENT_BATCH_MAX_PERMITS/);
    expect(() => parseServiceOptions({ batchMaxPermits: 2.5 })).toThrow(AgentConfigError);
  });
});
