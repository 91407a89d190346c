// `quotascope sweep` end to end on the real stack (mock provider, agent service, Prometheus,
// k6, chromium), scaled down: the review tree at 0.3 s per call on one replica with a small
// quota, 15 s windows and few steps. It must find a knee near the plan, write sweep.json,
// sweep.html and its screenshot, exit 1 with one line when --require is above the knee, and
// leave nothing running. Bad flags exit 2 with one line before anything starts.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SweepRecord } from '../../loadtest/sweep/run-sweep.ts';
import { expectNothingLeft, killStarted, runCommand } from './start-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'qs-sweep-'));
const FLAGS = ['--call-seconds', '0.3', '--tokens', '1000', '--replicas', '1', '--quota-tpm', '300000', '--window-seconds', '15', '--max-steps', '4', '--repeats', '1'];

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Waits up to `ms` for every pid to have exited. */
async function waitForExit(pids: readonly number[], ms: number): Promise<void> {
  for (let waited = 0; waited < ms && pids.some(alive); waited += 100) await new Promise((r) => setTimeout(r, 100));
}

afterAll(() => {
  killStarted();
  rmSync(dir, { recursive: true, force: true });
});

describe('quotascope sweep', () => {
  it('finds a knee near the plan on one stack, writes its record and page, and gates on --require', { timeout: 420_000 }, async () => {
    const reports = join(dir, 'reports');
    const run = await runCommand('sweep', [...FLAGS, '--require', '1000', '--report-dir', reports]);
    expect(run.out).toMatch(/\[sweep\] time budget: up to 5 steps of ~\d+ s/);
    expect(run.out).toMatch(/\[sweep\] step 1 of at most 5 \(double\)/);
    // --require far above the knee: exit 1, one line on stderr saying by how much.
    expect(run.code, run.out).toBe(1);
    const errLines = run.err.trim().split('\n');
    expect(errLines).toHaveLength(1);
    expect(errLines[0]).toMatch(/^sweep: the measured knee [\d.]+\/min is [\d.]+\/min \([\d.]+ %\) below --require 1000\.0\/min$/);
    const [runId] = readdirSync(reports);
    const folder = join(reports, runId as string);
    const record = JSON.parse(readFileSync(join(folder, 'sweep.json'), 'utf8')) as SweepRecord;
    const plan = record.plan?.perMinute as number;
    expect(plan).toBeGreaterThan(0);
    // The search doubled from half the plan and found a knee it repeated.
    expect(record.steps[0]?.perMinute).toBeCloseTo(plan / 2, 0);
    expect(record.steps[1]?.perMinute).toBeCloseTo(record.steps[0]?.perMinute * 2, 0);
    const knee = record.findings.knee;
    expect(knee).toBeDefined();
    expect(record.steps.filter((s) => s.phase === 'repeat').map((s) => s.perMinute)).toEqual([knee?.perMinute]);
    // Short windows hold few requests (one more or less is ~15 %): near the plan, not within 5 %.
    expect(Math.abs((knee?.servedPerMinute as number) / plan - 1)).toBeLessThan(0.3);
    // Every step measured whole requests inside its window, and some step shed.
    for (const s of record.steps) expect(s.started).toBeGreaterThan(0);
    expect(record.steps.some((s) => s.shed > 0)).toBe(true);
    expect(record.gap?.line).toMatch(/^plan [\d.]+\/min, measured [\d.]+ ± [\d.]+\/min \([+−][\d.]+ %\)$/);
    expect(record.require).toMatchObject({ perMinute: 1000, met: false });
    const html = readFileSync(join(folder, 'sweep.html'), 'utf8');
    expect(html).toContain('<svg class="sweep-chart"');
    expect(html).toContain('class="knee"');
    expect(html).toContain('class="plan"');
    expect(existsSync(join(folder, 'sweep.png'))).toBe(true);
    // Chromium's helper processes (the screenshot's) end a moment after the browser does.
    await waitForExit(run.pids, 5000);
    await expectNothingLeft(run, { processes: 4, urls: 3 });
  });

  it('refuses a bad flag with one line and exit 2, before anything starts', async () => {
    const run = await runCommand('sweep', ['--max-partial', '101']);
    expect(run.code).toBe(2);
    expect(run.err.trim()).toMatch(/^sweep: --max-partial: .*100/);
    expect(run.err.trim().split('\n')).toHaveLength(1);
    expect(run.pids).toEqual([]);
  });
});
