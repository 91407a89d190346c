// The Grafana-managed rules fire wherever they are loaded: a Grafana with no Prometheus rule
// file. Loaded alone (each rule's condition query as a Prometheus alert, nothing else), they
// name no recorded series, pass `promtool check rules`, and pass the same unit tests as the
// Prometheus rules: every alert fires on its synthetic series and stays silent on the other.
// No data on an alert guarding the quota is NoData (Alerting for a lost target), never OK.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAlerts, buildRecordingRules } from '../../dashboards/alerts.ts';
import { defaultConfig } from '../../dashboards/config.ts';
import { generatedPaths } from '../../dashboards/files.ts';
import { generatedDir } from '../../dashboards/generate.ts';
import { inlineRecordingRules } from '../../dashboards/render/grafana-alerts.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { parseQuery } from './lint.ts';

const exec = promisify(execFile);
const promtool = requireTool('promtool');
const scratch = mkdtempSync(join(tmpdir(), 'qs-grafana-only-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface GrafanaRule {
  title: string;
  for: string;
  noDataState: string;
  labels: Record<string, string>;
  condition: string;
  data: { refId: string; model: { expr?: string; expression?: string } }[];
}
const provisioning = parse(readFileSync(join(generatedDir, generatedPaths.alerting), 'utf8')) as { groups: { rules: GrafanaRule[] }[] };
const grafanaRules = provisioning.groups.flatMap((g) => g.rules);

/** Every raw series the agents and the scrape export (histograms by their _bucket/_sum/_count). */
const rawSeries = new Set(['up', ...Object.values(limiterMetrics).flatMap((d) => (d.type === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => `${d.name}${s}`) : [d.name]))]);

/** Each Grafana rule as a Prometheus alert: its condition ($P > 0) over query P, its for and labels. */
function grafanaOnlyRuleFile() {
  return {
    groups: [
      {
        name: 'grafana-only',
        rules: grafanaRules.map((r) => {
          expect(r.data.find((d) => d.refId === r.condition)?.model.expression, r.title).toBe('$P > 0');
          const p = r.data.find((d) => d.refId === 'P')?.model.expr as string;
          return { alert: r.title, expr: `(\n${p}\n) > 0`, for: r.for, labels: r.labels };
        }),
      },
    ],
  };
}

async function promtoolRun(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await exec(promtool, args, { cwd: scratch });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('Grafana-managed rules loaded alone', () => {
  it('read only raw series: no recording rule they would need is missing', () => {
    for (const rule of grafanaRules) {
      for (const query of rule.data.filter((d) => d.model.expr !== undefined)) {
        const parsed = parseQuery(query.model.expr as string);
        expect(parsed.error, `${rule.title}/${query.refId}`).toBeUndefined();
        for (const s of parsed.selectors) expect(rawSeries.has(s.metric), `${rule.title}/${query.refId} reads ${s.metric}, which no one exports`).toBe(true);
      }
    }
  });

  it('inline a recorded range as a subquery, the longer of two names first', () => {
    const rules = [
      { record: 'job:x:rate2m', expr: 'sum(rate(x[2m]))' },
      { record: 'job:x:rate2m_median30m', expr: 'quantile_over_time(0.5, job:x:rate2m[30m])' },
    ];
    expect(inlineRecordingRules('job:x:rate2m > 2 * job:x:rate2m_median30m', rules)).toBe(
      '(sum(rate(x[2m]))) > 2 * (quantile_over_time(0.5, (sum(rate(x[2m])))[30m:1m]))',
    );
  });

  it('pass promtool check rules', async () => {
    writeFileSync(join(scratch, 'grafana-only.rules.yml'), stringify(grafanaOnlyRuleFile(), { lineWidth: 0 }));
    const result = await promtoolRun('check', 'rules', 'grafana-only.rules.yml');
    expect(result.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(result.code).toBe(0);
  });

  it('fire and stay silent exactly as the Prometheus rules do (the same unit tests, no recording rule loaded)', async () => {
    writeFileSync(join(scratch, 'grafana-only.rules.yml'), stringify(grafanaOnlyRuleFile(), { lineWidth: 0 }));
    const tests = parse(readFileSync(join(generatedDir, generatedPaths.rulesTest), 'utf8')) as {
      rule_files: string[];
      tests: { alert_rule_test: { exp_alerts: { exp_annotations?: unknown }[] }[] }[];
    };
    tests.rule_files = ['grafana-only.rules.yml'];
    // Grafana renders its annotations itself: only the alerts and their labels are compared.
    for (const t of tests.tests) for (const check of t.alert_rule_test) for (const a of check.exp_alerts) delete a.exp_annotations;
    writeFileSync(join(scratch, 'grafana-only.test.yml'), stringify(tests, { lineWidth: 0 }));
    const result = await promtoolRun('test', 'rules', 'grafana-only.test.yml');
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  it('the generated rules are the specs: same names, and each rule has its spec\'s no-data state', () => {
    const alerts = buildAlerts(defaultConfig);
    expect(grafanaRules.map((r) => r.title)).toEqual(alerts.map((a) => a.name));
    for (const alert of alerts) {
      const rule = grafanaRules.find((r) => r.title === alert.name) as GrafanaRule;
      expect(rule.noDataState, alert.name).toBe(alert.noData.state);
      expect(alert.noData.why.length, alert.name).toBeGreaterThan(20);
    }
    // Every rule guarding the quota says so when nothing is reported; none reads as OK.
    const quotaGuards = ['LimiterAcquireTimeRising', 'ProviderRateLimitedDespiteLimiter', 'LimiterTimeouts', 'LimiterBudgetExhausted', 'LimiterBudgetNegative', 'LimiterTokenEstimateDrift', 'LimiterMaxWaitMissing'];
    for (const name of quotaGuards) expect(grafanaRules.find((r) => r.title === name)?.noDataState, name).toBe('NoData');
    expect(grafanaRules.find((r) => r.title === 'QuotascopeTargetDown')?.noDataState).toBe('Alerting');
    // The recording rules are still Prometheus's: the Grafana file names none of them.
    const text = readFileSync(join(generatedDir, generatedPaths.alerting), 'utf8');
    for (const r of buildRecordingRules(defaultConfig)) expect(text).not.toContain(r.record);
  });
});
