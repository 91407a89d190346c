// The quota benchmark scaled down (2 s windows, 3 windows of load): real ADK review trees on
// three replicas, the real genai client, the mock provider in its own process. The rows must
// be valid for the bench runner, and quotascope's default must draw no 429 from the provider.
// Nothing about timing is asserted.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { QUOTA_GROUP, runQuotaBench } from '../../bench/quota.ts';
import { rateRows, rowsSchema } from '../../bench/run.ts';

describe('quota benchmark, scaled down', () => {
  it('runs side by side with valid rows; quotascope default has 0 provider 429s', { timeout: 180_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'quota-bench-'));
    let printed = '';
    try {
      const plotPath = join(dir, 'quota.svg');
      const rows = await runQuotaBench({
        windowMs: 2_000,
        loadWindows: 3,
        variants: ['no limiter (SDK retries)', 'quotascope default'],
        aimdTimeline: false,
        plotPath,
        log: () => {},
        print: (text) => {
          printed += text;
        },
      });
      expect(rowsSchema.safeParse(rows).success).toBe(true);
      const rated = rateRows(rows);
      expect(rated.map((r) => r.name)).toEqual(['no limiter (SDK retries)', 'quotascope default']);
      for (const row of rated) {
        expect(row.group).toBe(QUOTA_GROUP);
        for (const key of ['provider429s', 'budgetUse', 'quotaUse', 'goodputPerMinute', 'p95Ms', 'timeouts', 'partialRequests', 'wastedTokens', 'goodputWithinSloPerMinute']) {
          expect(typeof row.extra?.[key]).toBe('number');
        }
      }
      const own = rated.find((r) => r.name === 'quotascope default');
      expect(own?.extra?.provider429s).toBe(0);
      for (const row of rated) {
        for (const key of ['partialRequests', 'wastedTokens']) expect(row.extra?.[key] as number, `${row.name} ${key}`).toBeGreaterThanOrEqual(0);
        for (const key of ['partialRequests', 'wastedTokens']) expect(row.extra?.[key] as number, `${row.name} ${key}`).toBeLessThanOrEqual(1);
        // Within the deadline is a subset of all whole requests.
        expect(row.extra?.goodputWithinSloPerMinute as number).toBeLessThanOrEqual(row.extra?.goodputPerMinute as number);
      }
      expect(printed).toMatch(/request deadline 2\.0 s \(60 s compressed 30x\)/);
      expect(printed).toMatch(/^target quotascope default partial <= 2 %: (met|NOT met) \(/m);
      expect(await readFile(plotPath, 'utf8')).toMatch(/^<svg[\s\S]*quotascope default[\s\S]*<\/svg>\n$/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
