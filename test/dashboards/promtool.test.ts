// The generated Prometheus rules pass `promtool check rules`, and the generated unit tests
// pass `promtool test rules`: every alert fires on its synthetic series and stays silent on
// the other, and the acquire-time warning fires before the 429 alert. The mutation cases
// prove these checks can fail.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { generatedPaths } from '../../dashboards/files.ts';
import { generatedDir } from '../../dashboards/generate.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';

const exec = promisify(execFile);
const promtool = requireTool('promtool');
const rulesFile = join(generatedDir, generatedPaths.rules);
const testFile = join(generatedDir, generatedPaths.rulesTest);
const scratch = mkdtempSync(join(tmpdir(), 'qs-promtool-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function promtoolRun(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await exec(promtool, args, { cwd: scratch });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

interface RuleFile {
  groups: { rules: { alert?: string; expr: string }[] }[];
}
interface AlertRuleTest {
  eval_time: string;
  alertname: string;
  exp_alerts: unknown[];
}
interface TestFile {
  rule_files: string[];
  tests: { name: string; alert_rule_test: AlertRuleTest[] }[];
}

/** Copies the generated rules and a (possibly edited) test file into the scratch folder. */
function stage(name: string, editTests?: (tests: TestFile) => void, editRules?: (rules: RuleFile) => void): string {
  const dir = join(scratch, name);
  rmSync(dir, { recursive: true, force: true });
  const rules = parse(readFileSync(rulesFile, 'utf8')) as RuleFile;
  editRules?.(rules);
  const tests = parse(readFileSync(testFile, 'utf8')) as TestFile;
  editTests?.(tests);
  const write = (file: string, value: unknown) => writeFileSync(join(scratch, file), stringify(value, { lineWidth: 0 }));
  write(`${name}.rules.yml`, rules);
  tests.rule_files = [`${name}.rules.yml`];
  write(`${name}.test.yml`, tests);
  return `${name}.test.yml`;
}

describe('promtool', () => {
  it('check rules accepts the generated rule file', async () => {
    copyFileSync(rulesFile, join(scratch, 'rules.yml'));
    const result = await promtoolRun('check', 'rules', 'rules.yml');
    expect(result.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(result.code).toBe(0);
  });

  it('test rules passes the generated unit tests (every alert fires and stays silent)', async () => {
    const result = await promtoolRun('test', 'rules', stage('generated'));
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  it('the acquire-time warning is firing at a time the 429 alert is still silent', () => {
    const tests = parse(readFileSync(testFile, 'utf8')) as TestFile;
    const checks = tests.tests.flatMap((t) => t.alert_rule_test);
    const firingAt = (name: string) =>
      checks.filter((c) => c.alertname === name && c.exp_alerts.length > 0).map((c) => Number.parseInt(c.eval_time, 10));
    const silentAt = (name: string) =>
      checks.filter((c) => c.alertname === name && c.exp_alerts.length === 0).map((c) => Number.parseInt(c.eval_time, 10));
    const acquireFires = Math.min(...firingAt('LimiterAcquireTimeRising'));
    expect(silentAt('ProviderRateLimitedDespiteLimiter')).toContain(acquireFires);
    expect(Math.min(...firingAt('ProviderRateLimitedDespiteLimiter'))).toBeGreaterThan(acquireFires);
  });

  it('fails when an alert threshold is broken (the tests can fail)', async () => {
    const file = stage('broken-threshold', undefined, (rules) => {
      const rule = rules.groups[1].rules.find((r) => r.alert === 'LimiterPermitsSaturated')!;
      rule.expr = rule.expr.replace('>= 1', '>= 2');
    });
    const result = await promtoolRun('test', 'rules', file);
    expect(result.code).toBe(1);
    expect(result.output).toContain('alertname: LimiterPermitsSaturated');
  });

  it('fails when a silent case is expected to fire', async () => {
    const file = stage('wrong-expectation', (tests) => {
      const leak = tests.tests.find((t) => t.name.includes('leak'))!;
      leak.alert_rule_test[0].exp_alerts = [{ exp_labels: { severity: 'critical' } }];
    });
    const result = await promtoolRun('test', 'rules', file);
    expect(result.code).toBe(1);
    expect(result.output).toContain('LimiterPermitLeak');
  });
});
