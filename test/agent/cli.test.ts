// `quotascope agent --replicas N`: N independent replicas on consecutive ports, each
// with its own /healthz and /metrics, gone after SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';

/** A start port with `count` consecutive free ports after it (probed, then released). */
async function freePortRun(count: number): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const servers = [];
    try {
      for (let i = 0; i < count; i++) {
        const s = createServer();
        s.listen(base + i, '127.0.0.1');
        await once(s, 'listening');
        servers.push(s);
      }
      return base;
    } catch {
      // taken: try another range
    } finally {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    }
  }
  throw new Error('no free port range');
}

const children: ChildProcess[] = [];
let mock: MockProvider | undefined;
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await mock?.close();
});

describe('agent CLI', () => {
  it('--replicas 2 starts two replicas on consecutive ports that stop on SIGTERM', async () => {
    const port = await freePortRun(2);
    // The agent checks at start that its provider answers.
    mock = await startMockProvider({}, { port: 0 });
    const child = spawn(
      process.execPath,
      ['cli/quotascope.ts', 'agent', '--port', String(port), '--replicas', '2', '--provider-url', mock.url, '--permits', '3'],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, QUOTASCOPE_AGENT_API_KEY: 'sekret-key-4711' } },
    );
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d) => {
      output += d;
    });
    child.stderr!.on('data', (d) => {
      output += d;
    });
    const deadline = Date.now() + 20_000;
    while (!output.includes('replica 2/2') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(output).toContain(`listening on http://127.0.0.1:${port} `);
    expect(output).toContain(`listening on http://127.0.0.1:${port + 1} `);
    expect(output).toContain('budget 450000 tokens/min'); // 900 k fleet budget split in two
    expect(output).not.toContain('sekret-key-4711'); // the key is never printed

    for (const p of [port, port + 1]) {
      const health = (await (await fetch(`http://127.0.0.1:${p}/healthz`)).json()) as { limiter: { permitsLimit: number } };
      expect(health.limiter.permitsLimit).toBe(3);
      const text = await (await fetch(`http://127.0.0.1:${p}/metrics`)).text();
      expect(sumOfMetric(text, limiterMetrics.budgetCapacity.name, { limiter: 'gemini' })).toBe(450_000);
    }
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it('a bad flag exits 2 naming it', async () => {
    const child = spawn(process.execPath, ['cli/quotascope.ts', 'agent', '--permits', 'lots'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(2);
    expect(stderr).toMatch(/--permits/);
  });
});
