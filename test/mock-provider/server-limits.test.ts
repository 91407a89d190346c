// The mock's HTTP server limits: slow headers time out with 408, connections beyond
// maxConnections are refused, close() ends in-flight (even stalled) responses, and the
// limits are bounded flags.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { getOn, openSocket, untilClosed } from '../raw-socket.ts';
import { resolveSettings } from '../../cli/mock-provider.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { generate, instant } from './helpers.ts';

let provider: MockProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

describe('mock provider server limits', () => {
  it('a client that never finishes its headers gets 408', async () => {
    provider = await startMockProvider(instant, { port: 0, limits: { headersTimeoutMs: 300, requestTimeoutMs: 300 } });
    const socket = await openSocket(provider.port);
    const answer = untilClosed(socket);
    socket.write('POST /v1beta/models/gemini-2.5-flash:generateContent HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    expect(await answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('connections beyond maxConnections are closed at once; the others keep serving', async () => {
    provider = await startMockProvider(instant, { port: 0, limits: { maxConnections: 1 } });
    const kept = await openSocket(provider.port);
    // An answer proves the server accepted it before the second arrives.
    expect(await getOn(kept, '/healthz')).toMatch(/^HTTP\/1\.1 200/);
    expect(await untilClosed(await openSocket(provider.port))).toBe('');
    expect(await getOn(kept, '/healthz')).toMatch(/^HTTP\/1\.1 200/);
    kept.destroy();
  });


  it('close() ends a stalled response: the request ends and close resolves', async () => {
    provider = await startMockProvider({ ...instant, faults: { stallProbability: 1, stallMs: 2_147_483_647 } }, { port: 0 });
    const ended = generate(provider.url, 'stall').then(
      (res) => res.text().then(() => `status ${res.status}`),
      () => 'connection closed',
    );
    while (((await provider.state.metrics.inFlight.get()).values[0]?.value ?? 0) === 0) await sleep(10);
    await provider.close();
    expect(await ended).toBe('connection closed');
    provider = undefined;
  });

  it('the limits are bounded flags: a bad value names the flag', () => {
    expect(resolveSettings(['--max-connections', '10', '--keep-alive-timeout-ms', '7000'], {}).listen.limits).toMatchObject({ maxConnections: 10, keepAliveTimeoutMs: 7000 });
    expect(() => resolveSettings(['--max-connections', '0'], {})).toThrow(/--max-connections: /);
    expect(() => resolveSettings(['--headers-timeout-ms', String(2 ** 31)], {})).toThrow(/--headers-timeout-ms: .*Too big/);
    expect(() => resolveSettings(['--request-timeout-ms', '1000', '--headers-timeout-ms', '2000'], {})).toThrow(/--headers-timeout-ms: must be <= requestTimeoutMs/);
  });
});
