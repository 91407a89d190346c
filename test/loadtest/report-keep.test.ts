// `quotascope report` never destroys a page a user has (issue 23, row 1): against a
// Prometheus that is down it exits 1 and writes its page beside the good one, which is kept;
// a page with data replaces it. Credentials in the Prometheus URL appear nowhere.
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/report.ts';
import { RUN_RECORD_FILE, writeRunRecord } from '../../loadtest/report/run-record.ts';
import { FAILED_REPORT_FILE, REPORT_FILE } from '../../loadtest/report/write.ts';

const scratch = mkdtempSync(join(tmpdir(), 'qs-report-keep-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function runFolder(name: string): string {
  const dir = join(scratch, name);
  const to = Date.parse('2026-12-01T10:00:00Z');
  writeRunRecord(dir, {
    runId: name,
    scenario: 'steady-40rpm',
    flags: { target: 'http://agent:s3cret@127.0.0.1:8080', duration: 60 },
    range: { from: to - 60_000, to },
    rateInterval: '20s',
  });
  return dir;
}

async function report(args: string[]): Promise<{ code: number; stderr: string }> {
  const errors: string[] = [];
  const error = vi.spyOn(console, 'error').mockImplementation((line: string) => void errors.push(line));
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    return { code: await main(args), stderr: errors.join('\n') };
  } finally {
    error.mockRestore();
    log.mockRestore();
  }
}

describe('report against a Prometheus that is down', () => {
  it('row 1: exits 1, keeps the good index.html byte for byte, and writes its page beside it', async () => {
    const dir = runFolder('finished-run');
    const good = `<!doctype html><title>the good page</title>${'<div>series</div>'.repeat(10_000)}`;
    writeFileSync(join(dir, REPORT_FILE), good);
    const port = await closedPort();
    const result = await report(['--run-dir', dir, '--prometheus', `http://prom:hunter2@127.0.0.1:${port}`]);
    expect(result.code).toBe(1);
    expect(readFileSync(join(dir, REPORT_FILE), 'utf8')).toBe(good);
    expect(result.stderr).toContain(`The page already there, ${join(dir, REPORT_FILE)}, is kept.`);
    const failed = readFileSync(join(dir, FAILED_REPORT_FILE), 'utf8');
    expect(failed).toContain('did not answer');
    for (const text of [failed, result.stderr, readFileSync(join(dir, RUN_RECORD_FILE), 'utf8')]) {
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('s3cret');
    }
  });

  it('with no page there yet, the page that says what is wrong becomes index.html', async () => {
    const dir = runFolder('fresh-run');
    const result = await report(['--run-dir', dir, '--prometheus', `http://127.0.0.1:${await closedPort()}`]);
    expect(result.code).toBe(1);
    expect(readFileSync(join(dir, REPORT_FILE), 'utf8')).toContain('did not answer');
    expect(existsSync(join(dir, FAILED_REPORT_FILE))).toBe(false);
  });
});
