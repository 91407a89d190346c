// Test stack for the agent integration tests: the real mock provider and the real agent
// service on ephemeral loopback ports, with a recording proxy between them that notes
// which agent called and when each model request started and ended.
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BaseLlm } from '@google/adk';
import type { AgentServiceOptionsInput } from '../../agent/config.ts';
import { type AgentService, startAgentService } from '../../agent/service.ts';
import { type MockConfigInput, type MockProvider, startMockProvider } from '../../mock-provider/index.ts';

export interface ProbedCall {
  path: string;
  /** The calling agent, from ADK's system instruction ("Your internal name is …"). */
  agent: string;
  start: number;
  end?: number;
  status?: number;
}

/**
 * A recording HTTP proxy in front of the mock provider: the agent service talks to it
 * over real sockets, it forwards every request unchanged and records which agent called,
 * when the call started and when its response ended.
 */
export class ProviderProbe {
  readonly calls: ProbedCall[] = [];
  #current = 0;
  #peak = 0;
  #server: Server | undefined;
  url = '';

  async start(target: string): Promise<void> {
    const upstream = new URL(target);
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const isModelCall = req.url?.includes(':generateContent') || req.url?.includes(':streamGenerateContent');
        const call: ProbedCall | undefined = isModelCall
          ? { path: req.url ?? '', agent: body.toString('utf8').match(/internal name is \\"([\w-]+)\\"/)?.[1] ?? 'unknown', start: performance.now() }
          : undefined;
        if (call) {
          this.calls.push(call);
          this.#current++;
          this.#peak = Math.max(this.#peak, this.#current);
        }
        const finish = () => {
          if (call && call.end === undefined) {
            call.end = performance.now();
            this.#current--;
          }
        };
        const forward = request(
          { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
          (up) => {
            if (call) call.status = up.statusCode;
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
            up.on('end', finish);
          },
        );
        forward.on('error', () => res.destroy());
        res.on('close', () => {
          finish();
          forward.destroy(); // the agent went away: so does the upstream call
        });
        forward.end(body);
      });
    });
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    if (!this.#server) return;
    const closed = new Promise<void>((resolve) => this.#server!.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  /** Most requests open at the mock at any one moment. */
  get peakInFlight(): number {
    return this.#peak;
  }

  get inFlight(): number {
    return this.#current;
  }

  /** Peak overlap of a subset of calls (from their recorded intervals). */
  static peakOverlap(calls: readonly ProbedCall[]): number {
    const edges = calls.flatMap((c) => [
      { t: c.start, d: 1 },
      { t: c.end ?? Number.POSITIVE_INFINITY, d: -1 },
    ]);
    edges.sort((a, b) => a.t - b.t || a.d - b.d); // an end before a start at the same instant
    let open = 0;
    let peak = 0;
    for (const e of edges) {
      open += e.d;
      peak = Math.max(peak, open);
    }
    return peak;
  }
}

/** Fast, deterministic mock latencies: ~`callMs` per call, 20 output tokens. */
export function fastMock(callMs: number, extra: MockConfigInput = {}): MockConfigInput {
  return {
    timeToFirstTokenMs: { kind: 'fixed', value: callMs },
    perOutputTokenMs: { kind: 'fixed', value: 0 },
    outputTokens: { kind: 'fixed', value: 20 },
    ...extra,
  };
}

export interface Stack {
  mock: MockProvider;
  agent: AgentService;
  probe: ProviderProbe;
  run(tree: string, body: unknown): Promise<{ status: number; body: RunResponse }>;
  close(): Promise<void>;
}

export interface RunResponse {
  text: string;
  branches: { name: string; outcome: string; errorCode?: string }[];
  missingBranches: string[];
  modelCalls: number;
  callsByOutcome: Record<string, number>;
  tokens: { reserved: number; actual: number };
  permitWaitMs: number;
  error?: string;
}

export async function startStack(
  mockConfig: MockConfigInput,
  agentOptions: AgentServiceOptionsInput = {},
  delegate?: BaseLlm,
): Promise<Stack> {
  const mock = await startMockProvider(mockConfig as Parameters<typeof startMockProvider>[0], { port: 0 });
  const probe = new ProviderProbe();
  let agent: AgentService;
  try {
    await probe.start(mock.url);
    agent = await startAgentService({ port: 0, providerUrl: probe.url, httpTimeoutMs: 10_000, ...agentOptions }, { delegate });
  } catch (error) {
    await probe.close();
    await mock.close();
    throw error;
  }
  return {
    mock,
    agent,
    probe,
    async run(tree, body) {
      const res = await fetch(`${agent.url}/v1/agents/${tree}/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as RunResponse };
    },
    async close() {
      await agent.close();
      await probe.close();
      await mock.close();
    },
  };
}

export async function metricsText(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  return res.text();
}
