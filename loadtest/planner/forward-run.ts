// The forward run: what a replica's door really serves of a tree, found by running the tree
// through it. The user's own ADK agents, wrapped by the limiters a replica builds from the
// run's flags (wrapModels, the same options and defaults), answered by the run's mock
// provider without its sockets (mock-model.ts), on a manual clock: twenty minutes of calls take
// a second or two. The door is kept saturated (one request always waits at it, the next
// arrives when that one is admitted or shed), so what it admits per minute once warm is what
// the replica sustains, whole requests only.
//
// Arithmetic alone brackets it: a window holding whole requests (floor(share / request)) is
// right when a request's calls start together, the tokens' exact share (share / request) when
// they interleave perfectly. A deep tree's door serves between them, by how its calls start
// over time, how late each runs against its hold, and what its later calls wait for a top-up:
// contract_review served 13.1 to 13.2/min against 12 and 14.2, research_pipeline 8.7 to 9.0
// against 9 and 10.5; the forward run gives 13.4 to 13.6 and 9.3 to 9.6.
import { InMemoryRunner, type LlmAgent, type RunnableRoot } from '@google/adk';
import { Registry } from 'prom-client';
import { type AgentServiceOptionsInput, parseServiceOptions } from '../../agent/config.ts';
import { createRequestAdmission } from '../../agent/limiter.ts';
import { wrapModels } from '../../agent/serve/wrap-models.ts';
import { ManualClock } from '../../instrumentation/clock.ts';
import { RequestShed } from '../../instrumentation/errors.ts';
import type { MockConfig } from '../../mock-provider/config.ts';
import { createRandom } from '../../mock-provider/random.ts';
import { MockModel } from './mock-model.ts';

/** Quota windows run before counting (the first requests meet cold limiters), then counted. */
export const FORWARD_WARM_WINDOWS = 3;
export const FORWARD_COUNTED_WINDOWS = 30;
/** Wall time a forward run may take before it gives up (a tree far larger than the samples). */
export const FORWARD_MAX_WALL_MS = 120_000;
/** Clock steps of the run, ms: timers fire at their own times within a step. */
const STEP_MS = 100;

export interface ForwardRunInput {
  readonly root: RunnableRoot;
  /** The tree's LLM agents (llmAgentsOf its walk): given the replica's limiters for the run, then their own models back. */
  readonly agents: readonly LlmAgent[];
  /** One replica's limiter options, as its flags give them (serve's --replica-share included). */
  readonly limiter: AgentServiceOptionsInput;
  /** The run's mock provider: its answers, their lengths and times. */
  readonly mock: MockConfig;
  /** The user message each request sends. */
  readonly message: string;
  /** Windows counted (default FORWARD_COUNTED_WINDOWS). */
  readonly countedWindows?: number;
  /** Wall time the run may take, ms (default FORWARD_MAX_WALL_MS). */
  readonly maxWallMs?: number;
}

export interface ForwardRun {
  /** Whole requests one replica serves per minute, its door saturated. */
  readonly servedPerMinute: number;
  /** Requests counted: admitted and not ended partial, shed at the door. */
  readonly served: number;
  readonly shed: number;
  /** Requests that ended partial in the whole run, the warm-up's included. */
  readonly partial: number;
  /** Minutes counted (the warm-up left out). */
  readonly minutes: number;
}

export class ForwardRunError extends Error {
  override name = 'ForwardRunError';
}

/**
 * Runs `input.root`'s requests through one replica's door until FORWARD_WARM_WINDOWS and the
 * counted windows have passed on the clock, and counts the requests admitted after the warm-up.
 * Central quota sharing runs as static: one replica's share (the fleet's window behaves as
 * the replicas' shares added up). Throws ForwardRunError when no admission is configured, an
 * agent keeps a model of its own (its calls would leave the run), a request fails (a tool
 * that throws), or the run takes longer than maxWallMs.
 */
export async function forwardRun(input: ForwardRunInput): Promise<ForwardRun> {
  const options = parseServiceOptions({ ...input.limiter, quotaSharing: input.limiter.quotaSharing === 'central' ? 'static' : input.limiter.quotaSharing, redisUrl: undefined });
  const maxWallMs = input.maxWallMs ?? FORWARD_MAX_WALL_MS;
  const clock = new ManualClock();
  const admission = createRequestAdmission(options, clock);
  if (!admission) throw new ForwardRunError('the forward run plans request admission only');
  const random = createRandom(input.mock.seed);
  const originals = input.agents.map((agent) => agent.model);
  const restore = () =>
    input.agents.forEach((agent, i) => {
      agent.model = originals[i];
    });
  const wrapped = await wrapModels(input.agents, options, { providerUrl: 'http://127.0.0.1:1/', apiKey: 'forward-run', httpTimeoutMs: 1 }, new Registry(), {
    delegateFor: (model) => new MockModel(model, input.mock, random, clock),
    clock,
  });
  const kept = wrapped.decisions.find((d) => d.action === 'kept');
  if (kept?.action === 'kept') {
    restore();
    await wrapped.close();
    throw new ForwardRunError(`agent "${kept.agent}" keeps a model of its own (${kept.reason}): its calls would leave the run`);
  }
  const windowMs = options.quotaWindowMs;
  const countFrom = FORWARD_WARM_WINDOWS * windowMs;
  const end = countFrom + (input.countedWindows ?? FORWARD_COUNTED_WINDOWS) * windowMs;
  const runner = new InMemoryRunner({ agent: input.root, appName: 'forward_run' });
  const message = { role: 'user', parts: [{ text: input.message }] };
  /** Of the requests that arrived after the warm-up: admitted, shed, and the admitted ones that ended partial; partial ones of the whole run. */
  const counted = { admitted: 0, partial: 0, shed: 0, partialEver: 0 };
  let atDoor = false;
  /** No arrival before this time (a request shed at once is followed by the next a step later). */
  let nextArrival = 0;
  const arrive = async () => {
    atDoor = true;
    const arrivedAt = clock.now();
    const counts = arrivedAt >= countFrom;
    const session = await runner.sessionService.createSession({ appName: 'forward_run', userId: 'forward' });
    let partial = false;
    try {
      await admission.run(
        input.root,
        async () => {
          atDoor = false;
          if (counts) counted.admitted++;
          for await (const event of runner.runAsync({ userId: 'forward', sessionId: session.id, newMessage: message })) if (event.errorCode) partial = true;
        },
        { message, arrivedAt },
      );
      if (partial) {
        // Every partial request counts, the warm-up's too: the limiter's invariant says none.
        counted.partialEver++;
        if (counts) counted.partial++;
      }
    } catch (error) {
      if (!(error instanceof RequestShed)) throw error;
      atDoor = false;
      nextArrival = clock.now() + STEP_MS;
      if (counts) counted.shed++;
    }
  };
  const failures: unknown[] = [];
  const began = performance.now();
  try {
    while (clock.now() < end) {
      if (!atDoor && clock.now() >= nextArrival) arrive().catch((error: unknown) => failures.push(error));
      await clock.advance(STEP_MS);
      if (failures.length > 0) throw new ForwardRunError(`a request of the forward run failed: ${(failures[0] as Error).message}`);
      if (performance.now() - began > maxWallMs) throw new ForwardRunError(`it took longer than ${maxWallMs / 1000} s`);
    }
  } finally {
    restore();
    await wrapped.close();
  }
  const minutes = (end - countFrom) / 60_000;
  // A request admitted late in the run may still be running: counted whole, as the door admitted it.
  const served = counted.admitted - counted.partial;
  return { servedPerMinute: served / minutes, served, partial: counted.partialEver, shed: counted.shed, minutes };
}
