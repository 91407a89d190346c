// `npm start` end to end, as a user runs it: `quotascope start` as a child process with a
// short, scaled-down run (real mock provider, agent service with 2 replicas, Prometheus, k6).
// Asserts the exit code, the printed summary and progress, reports/<run-id>/ (summary.json,
// index.html, k6.log) and that no process it started (nor any port it served) survives it;
// also after a SIGTERM mid-run.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireSecondsBuckets } from '../../instrumentation/metrics/definitions.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { expectNothingLeft, killStarted, npmStart } from './start-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'qs-npm-start-'));
const FLAGS = ['--duration', '10', '--rate', '60', '--call-seconds', '0.5', '--tokens', '1000', '--replicas', '2', '--burst-users', '3'];

afterAll(() => {
  killStarted();
  rmSync(dir, { recursive: true, force: true });
});

/** True once a run folder under `reports` has a k6.log with a progress line. */
function k6Running(reports: string): boolean {
  if (!existsSync(reports)) return false;
  return readdirSync(reports).some((id) => {
    const log = join(reports, id, 'k6.log');
    return existsSync(log) && /running \(/.test(readFileSync(log, 'utf8'));
  });
}

describe('npm start (quotascope start)', () => {
  it('a short run exits 0, prints the summary, writes summary.json and leaves no process behind', async () => {
    requireTool('k6');
    requireTool('prometheus');
    const reports = join(dir, 'ok');
    const run = await npmStart([...FLAGS, '--report-dir', reports]);
    expect(run.code, run.out).toBe(0);
    for (const line of ['user requests:', 'model calls:', '429s:', 'acquire time:', 'limiter timeouts:', 'alerts fired:', 'alerts at the end:', 'plan vs measured']) {
      expect(run.out).toContain(line);
    }
    // The summary opens with the verdict; every started request is counted.
    expect(run.out).toMatch(/\nverdict: the tree fits its quota at 60 user requests\/min; served \d+, partial 0, shed 0, failed 0, unfinished \d+ of \d+ requests\nquotascope run /);
    expect(run.out).toMatch(/user requests: +\d+ started: served \d+ \([\d.]+%\), partial 0 \(0%\), shed 0 \(0%\), failed 0, unfinished \d+/);
    // Progress: a plain line (not a terminal) with the figures; k6's per-second lines only in k6.log.
    expect(run.out).toMatch(/^\[run\] .* · \d+ requests · acquire p95 .* · 429s \d+ · timeouts \d+$/m);
    expect(run.out).not.toMatch(/running \([\dm.]+s\)/);

    const [runId] = readdirSync(reports);
    const summary = JSON.parse(readFileSync(join(reports, runId, 'summary.json'), 'utf8'));
    expect(summary.runId).toBe(runId);
    expect(summary.k6ExitCode).toBe(0);
    // 3 burst users + 60/min for 10 s (k6 also starts one at the window's end: 10 or 11), 5 model calls each.
    expect(summary.k6.requests).toBeGreaterThanOrEqual(13);
    expect(summary.k6.requests).toBeLessThanOrEqual(14);
    expect(summary.k6.failedRate).toBe(0);
    expect(summary.stack.requests).toBe(summary.k6.requests);
    expect(summary.stack.modelCalls).toBe(5 * summary.k6.requests);
    expect(summary.stack.providerRateLimited).toBe(0);
    expect(summary.stack.timeouts).toBe(0);
    expect(summary.stack.acquireSeconds.p95).toBeGreaterThanOrEqual(0);
    expect(summary.stack.alertsFired).toEqual(expect.any(Array));
    expect(summary.planVsMeasured.rows.map((r: { quantity: string }) => r.quantity)).toEqual(
      summary.planVsMeasured.admission === 'request'
        ? ['served requests/min', 'shed requests/min', 'partial requests/min', 'calls in flight', 'permits in use']
        : ['served requests/min', 'calls in flight', 'permits in use'],
    );
    expect(summary.planVsMeasured.rows[0].planned).toBe(60);
    expect(summary.processes.map((p: { name: string }) => p.name)).toEqual(['mock-provider', 'agent', 'prometheus']);
    for (const f of ['index.html', 'scenario.json', 'k6-summary.json', 'k6.log', 'agent.log', 'mock-provider.log', 'prometheus.log']) {
      expect(existsSync(join(reports, runId, f)), f).toBe(true);
    }
    expect(readFileSync(join(reports, runId, 'k6.log'), 'utf8')).toMatch(/running \([\dm.]+s\)/);
    expect(readFileSync(join(reports, runId, 'index.html'), 'utf8')).toContain('Calls in flight');
    // npm start ends by printing the report's path; no acquire quantile reads above maxWait's last bucket.
    expect(run.out.trim().split('\n').at(-1)).toBe(`report: ${join(reports, runId, 'index.html')}`);
    expect(summary.stack.acquireSeconds.p99).toBeLessThanOrEqual(acquireSecondsBuckets(summary.stack.maxWaitSeconds).at(-1) as number);
    for (const p of summary.processes) expect(run.pids).toContain(p.pid);
    await expectNothingLeft(run);
  }, 150_000);

  it('SIGTERM mid-run stops k6 and every child, and exits 130', async () => {
    let signalled = false;
    const run = await npmStart([...FLAGS, '--duration', '60', '--report-dir', join(dir, 'term')], (child) => {
      // Once k6 is running (it logs to k6.log), stop the run the way a supervisor would.
      if (!signalled && k6Running(join(dir, 'term'))) {
        signalled = true;
        child.kill('SIGTERM');
      }
    });
    expect(signalled).toBe(true);
    expect(run.code, run.out).toBe(130);
    expect(run.out).toContain('SIGTERM: stopping the run');
    expect(run.out).not.toContain('user requests:'); // no summary of a run that did not finish
    await expectNothingLeft(run);
  }, 90_000);
});
