// What each instrumentation entry loads: the public entry must not pull in the redis client,
// an OpenTelemetry SDK, express or the Grafana SDK, and must not export internals. A child
// Node process records every package imported by a module inside instrumentation/.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as publicEntry from '../../instrumentation/index.ts';

const instrumentationDir = path.resolve(import.meta.dirname, '../../instrumentation');

/** Packages imported directly by instrumentation/ modules when `entry` is loaded. */
function packagesLoadedBy(entry: string): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = new Set();
    const dir = ${JSON.stringify(`file://${instrumentationDir}/`)};
    registerHooks({
      resolve(specifier, context, next) {
        const bare = !specifier.startsWith('.') && !specifier.startsWith('file:') && !specifier.startsWith('node:');
        if (bare && context.parentURL?.startsWith(dir)) seen.add(specifier);
        return next(specifier, context);
      },
    });
    await import(${JSON.stringify(path.join(instrumentationDir, entry))});
    process.stdout.write(JSON.stringify([...seen].sort()));
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`loading ${entry} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as string[];
}

describe('instrumentation entries', () => {
  it('the public entry loads neither the redis client, an OTel SDK, express nor the Grafana SDK', () => {
    const loaded = packagesLoadedBy('index.ts');
    expect(loaded).toContain('@opentelemetry/api');
    const forbidden = loaded.filter(
      (pkg) => pkg === 'redis' || pkg.startsWith('@redis/') || (pkg.startsWith('@opentelemetry/') && pkg !== '@opentelemetry/api') || pkg === 'express' || pkg.startsWith('@grafana/'),
    );
    expect(forbidden).toEqual([]);
  });

  it('the redis entry is where the redis client is loaded', () => {
    expect(packagesLoadedBy('redis.ts')).toContain('redis');
  });

  it('the public entry exports what a user wires, not the internals', () => {
    const names = Object.keys(publicEntry);
    expect(names).toEqual(expect.arrayContaining(['RateLimitedLlm', 'TokenBudget', 'AimdLimit', 'replicaShare', 'DEFAULT_MAX_WAIT_MS']));
    for (const internal of ['ManualClock', 'RollingWindow', 'TOKEN_BUCKET_SCRIPT', 'DeadlineExceeded', 'RedisTokenBudget', 'WaiterQueue']) {
      expect(names).not.toContain(internal);
    }
  });
});
