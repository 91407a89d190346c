// The agent service's HTTP server limits: a slow client's headers time out, connections
// beyond maxConnections are refused, and close() lets in-flight runs answer within the
// grace period, then aborts the rest: either way the request ends and no permit stays held.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { getOn, openSocket, untilClosed } from '../raw-socket.ts';
import { fastMock, type Stack, startStack } from './stack.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

let stack: Stack | undefined;
afterEach(async () => {
  // close() may already have run in the test; closing twice must be harmless.
  await stack?.close();
  stack = undefined;
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(10);
}

describe('agent service server limits', () => {
  it('a client that never finishes its headers gets 408 and the connection closes', async () => {
    stack = await startStack(fastMock(10), { headersTimeoutMs: 300, requestTimeoutMs: 300 });
    const socket = await openSocket(stack.agent.port);
    const answer = untilClosed(socket);
    socket.write('POST /v1/agents/review/run HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n');
    expect(await answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('connections beyond maxConnections are closed at once; the others keep serving', async () => {
    stack = await startStack(fastMock(10), { maxConnections: 2 });
    const kept = [await openSocket(stack.agent.port), await openSocket(stack.agent.port)];
    // An answer on each proves the server accepted both before the third arrives.
    for (const socket of kept) expect(await getOn(socket, '/healthz')).toMatch(/^HTTP\/1\.1 200/);
    const extra = await openSocket(stack.agent.port);
    expect(await untilClosed(extra)).toBe('');
    expect(await getOn(kept[0], '/healthz')).toMatch(/^HTTP\/1\.1 200/);
    for (const socket of kept) socket.destroy();
  });


  it('close() lets a run that ends within the grace period answer 200', async () => {
    stack = await startStack(fastMock(300), { shutdownGraceMs: 20_000 });
    const { agent, probe } = stack;
    const response = stack.run('review', { document: 'finish me' });
    await waitFor(() => probe.inFlight > 0);
    await agent.close();
    const { status, body } = await response;
    expect(status).toBe(200);
    expect(body.branches.map((b) => b.outcome)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(agent.limiter.snapshot().permitsInUse).toBe(0);
  });

  it('close() aborts a run that outlives the grace period: it answers 503 with its branches, permits and provider calls are released', async () => {
    // Every provider call stalls for the longest timer: only the shutdown can end it.
    stack = await startStack(fastMock(10, { faults: { stallProbability: 1, stallMs: 2_147_483_647 } }), { shutdownGraceMs: 200 });
    const { agent, probe } = stack;
    const response = stack.run('review', { document: 'stalls forever' });
    await waitFor(() => probe.inFlight === 4);
    await agent.close();
    const { status, body } = await response;
    expect(status).toBe(503);
    expect(body.error).toMatch(/shutting down/);
    expect(body.branches.map((b) => b.name)).toEqual(['correctness', 'security', 'style', 'tests', 'synthesizer']);
    expect(body.branches.every((b) => b.outcome !== 'ok')).toBe(true);
    expect(agent.limiter.snapshot()).toMatchObject({ permitsInUse: 0, waiting: 0 });
    await waitFor(() => probe.inFlight === 0);
    const requests = sumOfMetric(await agent.registry.metrics(), 'agent_requests_total', { tree: 'review', status: '503' });
    expect(requests).toBe(1);
  });

});
