// The generated Prometheus rules pass `promtool check rules`, and the generated unit tests
// pass `promtool test rules`: every alert fires on its synthetic series and stays silent on
// the other, the acquire-time warning fires before the 429 alert, the door-wait warning before
// the shed alert, a 429 counter born at 1 fires the critical alert, and the acquire threshold
// follows each limiter's maxWait gauge (5 s and 20 s). The same holds for a user's config (a custom
// job selector and datasource), whose output names none of quotascope's own jobs. The
// mutation cases prove these checks can fail.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDashboardsConfig } from '../../dashboards/config.ts';
import { generatedPaths } from '../../dashboards/files.ts';
import { generatedDir, loadConfigFile, writeGenerated } from '../../dashboards/generate.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { parseQuery } from './lint.ts';

const exec = promisify(execFile);
const promtool = requireTool('promtool');
const scratch = mkdtempSync(join(tmpdir(), 'qs-promtool-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const customDir = join(scratch, 'custom-stack');
writeGenerated(customDir, loadConfigFile(new URL('../../dashboards/examples/custom-stack.yaml', import.meta.url).pathname));
/** Any label matchers: a namespace, a regex job with alternatives, a negative matcher. */
const matchersDir = join(scratch, 'matchers');
writeGenerated(
  matchersDir,
  parseDashboardsConfig({
    selectors: { agent: 'namespace="prod", job=~"agents-a|agents-b", cluster!="staging"', mockProvider: null },
    alerts: { labels: { team: 'llm' } },
  }),
);

const outputs: [string, string][] = [
  ['the default config (committed)', generatedDir],
  ['custom-stack.yaml', customDir],
  ['namespace, regex and negative matchers', matchersDir],
];

async function promtoolRun(cwd: string, ...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await exec(promtool, args, { cwd });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

interface RuleFile {
  groups: { rules: { alert?: string; record?: string; expr: string }[] }[];
}
interface AlertRuleTest {
  eval_time: string;
  alertname: string;
  exp_alerts: unknown[];
}
interface TestFile {
  rule_files: string[];
  tests: { name: string; input_series: { series: string; values: string }[]; alert_rule_test: AlertRuleTest[] }[];
}

/** Copies a folder's generated rules and a (possibly edited) test file into the scratch folder. */
function stage(from: string, name: string, editTests?: (tests: TestFile) => void, editRules?: (rules: RuleFile) => void): string {
  const rules = parse(readFileSync(join(from, generatedPaths.rules), 'utf8')) as RuleFile;
  editRules?.(rules);
  const tests = parse(readFileSync(join(from, generatedPaths.rulesTest), 'utf8')) as TestFile;
  editTests?.(tests);
  const write = (file: string, value: unknown) => writeFileSync(join(scratch, file), stringify(value, { lineWidth: 0 }));
  write(`${name}.rules.yml`, rules);
  tests.rule_files = [`${name}.rules.yml`];
  write(`${name}.test.yml`, tests);
  return `${name}.test.yml`;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe.each(outputs)('promtool on %s', (name, dir) => {
  it('check rules accepts the generated rule file', async () => {
    const target = join(scratch, `${name.replace(/\W+/g, '-')}.rules.yml`);
    copyFileSync(join(dir, generatedPaths.rules), target);
    const result = await promtoolRun(scratch, 'check', 'rules', target);
    expect(result.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(result.code).toBe(0);
  });

  it('test rules passes the generated unit tests (every alert fires and stays silent)', async () => {
    const result = await promtoolRun(scratch, 'test', 'rules', stage(dir, name.replace(/\W+/g, '-')));
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });
});

describe('promtool: the generated alert tests', () => {
  const testFile = join(generatedDir, generatedPaths.rulesTest);

  it('the acquire-time warning is firing at a time the 429 alert is still silent', () => {
    const tests = parse(readFileSync(testFile, 'utf8')) as TestFile;
    const checks = tests.tests.filter((t) => t.name.includes('before the 429s')).flatMap((t) => t.alert_rule_test);
    const firingAt = (name: string) =>
      checks.filter((c) => c.alertname === name && c.exp_alerts.length > 0).map((c) => Number.parseInt(c.eval_time, 10));
    const silentAt = (name: string) =>
      checks.filter((c) => c.alertname === name && c.exp_alerts.length === 0).map((c) => Number.parseInt(c.eval_time, 10));
    const acquireFires = Math.min(...firingAt('LimiterAcquireTimeRising'));
    expect(silentAt('ProviderRateLimitedDespiteLimiter')).toContain(acquireFires);
    expect(Math.min(...firingAt('ProviderRateLimitedDespiteLimiter'))).toBeGreaterThan(acquireFires);
  });

  it('the door-wait warning is firing at a time the shed alert is still silent', () => {
    const tests = parse(readFileSync(testFile, 'utf8')) as TestFile;
    const checks = tests.tests.filter((t) => t.name.includes('before the sheds')).flatMap((t) => t.alert_rule_test);
    const at = (name: string, firing: boolean) =>
      checks.filter((c) => c.alertname === name && c.exp_alerts.length > 0 === firing).map((c) => Number.parseInt(c.eval_time, 10));
    const doorFires = Math.min(...at('LimiterDoorWaitRising', true));
    expect(at('LimiterRequestsShed', false)).toContain(doorFires);
    expect(Math.min(...at('LimiterRequestsShed', true))).toBeGreaterThan(doorFires);
  });

  it('a 429 counter born at 1 is checked firing one evaluation after its first sample', () => {
    const tests = parse(readFileSync(testFile, 'utf8')) as TestFile;
    const born = tests.tests.find((t) => t.input_series.some((s) => s.series.startsWith('llm_limiter_rate_limited_total{') && /^_x\d+ 1x/.test(s.values)))!;
    const firstSample = Math.min(
      ...born.input_series.filter((s) => /^_x\d+ 1x/.test(s.values)).map((s) => Number(/^_x(\d+)/.exec(s.values)![1])),
    );
    const fires = born.alert_rule_test.filter((c) => c.alertname === 'ProviderRateLimitedDespiteLimiter' && c.exp_alerts.length > 0);
    expect(Math.min(...fires.map((c) => Number.parseInt(c.eval_time, 10)))).toBe(firstSample + 1);
  });

  it('fails when the 429 record reads increase() alone (a counter born at 1 reads 0)', async () => {
    const file = stage(generatedDir, 'increase-alone', undefined, (rules) => {
      const record = rules.groups[0].rules.find((r) => r.record?.startsWith('job_limiter:llm_limiter_rate_limited_total:'))!;
      record.expr = 'sum by (job, limiter) (increase(llm_limiter_rate_limited_total[5m]))';
    });
    const result = await promtoolRun(scratch, 'test', 'rules', file);
    expect(result.code).toBe(1);
    expect(result.output).toContain('alertname: ProviderRateLimitedDespiteLimiter, time: 6m');
  });

  it('fails when the door wait is read from the admitted calls\' permit wait instead', async () => {
    const file = stage(generatedDir, 'door-from-acquire', undefined, (rules) => {
      const record = rules.groups[0].rules.find((r) => r.record?.startsWith('job_limiter:llm_limiter_request_admission_duration_seconds:'))!;
      record.expr = record.expr.replaceAll('llm_limiter_request_admission_duration_seconds', 'llm_limiter_acquire_duration_seconds');
    });
    const result = await promtoolRun(scratch, 'test', 'rules', file);
    expect(result.code).toBe(1);
    expect(result.output).toContain('alertname: LimiterDoorWaitRising');
  });

  it('the acquire-time cases run with maxWait gauges of 20 s and 5 s', () => {
    const tests = parse(readFileSync(testFile, 'utf8')) as TestFile;
    const gauges = tests.tests.flatMap((t) => t.input_series).filter((s) => s.series.startsWith('llm_limiter_max_wait_seconds{'));
    expect(new Set(gauges.map((g) => g.values.split('x')[0]))).toEqual(new Set(['20', '5']));
  });

  it('fails when the 5 s limiter is given a maxWait of 20 s (the threshold follows the gauge)', async () => {
    const file = stage(generatedDir, 'maxwait-20', (tests) => {
      const sameTimes = tests.tests.find((t) => t.name.startsWith('the same acquire times'))!;
      for (const s of sameTimes.input_series) if (s.series.startsWith('llm_limiter_max_wait_seconds{')) s.values = s.values.replace(/^5x/, '20x');
    });
    const result = await promtoolRun(scratch, 'test', 'rules', file);
    expect(result.code).toBe(1);
    expect(result.output).toContain('alertname: LimiterAcquireTimeRising');
  });

  it('fails when an alert threshold is broken (the tests can fail)', async () => {
    const file = stage(generatedDir, 'broken-threshold', undefined, (rules) => {
      const rule = rules.groups[1].rules.find((r) => r.alert === 'LimiterPermitsSaturated')!;
      rule.expr = rule.expr.replace('>= 1', '>= 2');
    });
    const result = await promtoolRun(scratch, 'test', 'rules', file);
    expect(result.code).toBe(1);
    expect(result.output).toContain('alertname: LimiterPermitsSaturated');
  });

  it('fails when a silent case is expected to fire', async () => {
    const file = stage(generatedDir, 'wrong-expectation', (tests) => {
      const leak = tests.tests.find((t) => t.name.includes('leak'))!;
      leak.alert_rule_test[0].exp_alerts = [{ exp_labels: { severity: 'critical' } }];
    });
    const result = await promtoolRun(scratch, 'test', 'rules', file);
    expect(result.code).toBe(1);
    expect(result.output).toContain('LimiterPermitLeak');
  });
});

describe('a custom job selector and datasource', () => {
  const files = filesUnder(customDir).map((path) => ({ path, text: readFileSync(path, 'utf8') }));

  it('name none of quotascope\'s own jobs or its datasource, anywhere', () => {
    for (const { path, text } of files) expect(text, path).not.toMatch(/quotascope-(agent|mock-provider|prometheus)\b/);
  });

  it('carry job="my-agents" in the rules and dashboards, and the datasource uid my-prom in every Grafana alert query', () => {
    const rules = readFileSync(join(customDir, generatedPaths.rules), 'utf8');
    expect(rules).toContain('job="my-agents"');
    for (const uid of ['quotascope-limiter', 'quotascope-loadtest']) {
      const dashboard = JSON.parse(readFileSync(join(customDir, generatedPaths.dashboardsDir, `${uid}.json`), 'utf8'));
      const job = dashboard.templating.list.find((v: { name: string }) => v.name === 'job');
      expect(job.query).toBe('label_values(llm_limiter_permits_in_use{job="my-agents"}, job)');
      const instance = dashboard.templating.list.find((v: { name: string }) => v.name === 'instance');
      expect(instance.query).toContain('job="my-agents"');
    }
    const alerting = parse(readFileSync(join(customDir, generatedPaths.alerting), 'utf8'));
    const uids = alerting.groups[0].rules.flatMap((r: { data: { datasourceUid: string }[] }) => r.data.map((d) => d.datasourceUid));
    expect(new Set(uids)).toEqual(new Set(['my-prom', '__expr__']));
  });

  it('every job matcher in every query selects my-agents', () => {
    const rules = parse(readFileSync(join(customDir, generatedPaths.rules), 'utf8')) as RuleFile;
    const exprs = rules.groups.flatMap((g) => g.rules.map((r) => r.expr));
    for (const expr of exprs) {
      for (const s of parseQuery(expr).selectors) {
        for (const m of s.matchers.filter((x) => x.label === 'job')) expect(m, expr).toEqual({ label: 'job', op: '=', value: 'my-agents' });
      }
    }
  });
});
