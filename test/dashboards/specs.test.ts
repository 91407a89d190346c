// The dashboard and alert specs are complete and consistent, and the generated Grafana and
// Prometheus files carry them faithfully.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import { alerts, recordingRules } from '../../dashboards/alerts.ts';
import { alertTestCases } from '../../dashboards/alertTests.ts';
import { acquireWarnSeconds, agent, k6, mock, thresholds } from '../../dashboards/config.ts';
import { generatedFiles, generatedPaths } from '../../dashboards/files.ts';
import { dashboards } from '../../dashboards/panels/index.ts';
import { instantiate, panelsOf } from '../../dashboards/panels/spec.ts';
import { limiterDashboard } from '../../dashboards/panels/limiter.ts';

const files = generatedFiles();
const knownMetrics = new Set<string>([
  ...Object.values(limiterMetrics).map((d) => d.name),
  ...Object.values(agent),
  ...Object.values(mock),
  ...Object.values(k6),
  ...recordingRules.map((r) => r.record),
  'up',
  'ALERTS',
]);

/** Metric names in a PromQL expression (histogram suffixes removed): what is left after
 * dropping strings, selectors, ranges, grouping clauses, function names and keywords. */
function metricsIn(expr: string): string[] {
  const stripped = expr
    .replace(/"[^"]*"/g, '')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|on|without|ignoring)\s*\([^)]*\)/g, ' ');
  return [...stripped.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)]
    .filter((match) => !match[2] && !['and', 'or', 'unless', 'bool', 'offset'].includes(match[1]))
    .map((match) => match[1].replace(/_(bucket|sum|count)$/, ''));
}

describe('panel specs', () => {
  it('every panel has a title, a description, a unit and at least one query', () => {
    for (const dashboard of dashboards) {
      for (const panel of panelsOf(dashboard)) {
        expect(panel.title, `${dashboard.uid}/${panel.key}`).not.toBe('');
        expect(panel.description.length, `${dashboard.uid}/${panel.key} description`).toBeGreaterThan(20);
        expect(panel.unit, `${dashboard.uid}/${panel.key} unit`).toMatch(/^[a-z]+$/);
        expect(panel.targets.length).toBeGreaterThan(0);
      }
    }
  });

  it('panel keys are unique per dashboard and dashboard uids are unique', () => {
    expect(new Set(dashboards.map((d) => d.uid)).size).toBe(dashboards.length);
    for (const dashboard of dashboards) {
      const keys = panelsOf(dashboard).map((p) => p.key);
      expect(new Set(keys).size, dashboard.uid).toBe(keys.length);
    }
  });

  it('every query uses only known metric names (limiter names come from the definitions)', () => {
    for (const dashboard of dashboards) {
      for (const panel of panelsOf(dashboard)) {
        for (const target of panel.targets) {
          const names = metricsIn(target.expr);
          expect(names.length, target.expr).toBeGreaterThan(0);
          for (const name of names) expect(knownMetrics.has(name), `${name} in ${panel.key}`).toBe(true);
        }
      }
    }
    for (const rule of [...recordingRules.map((r) => r.expr), ...alerts.map((a) => a.expr)]) {
      for (const name of metricsIn(rule)) expect(knownMetrics.has(name), `${name} in ${rule}`).toBe(true);
    }
  });

  it('draws the alert thresholds on the panels the alerts link to', () => {
    const byKey = new Map(panelsOf(limiterDashboard).map((p) => [p.key, p]));
    const lines = (key: string) => byKey.get(key)?.thresholds?.map((t) => t.value) ?? [];
    expect(lines('acquire-quantiles')).toEqual([acquireWarnSeconds, thresholds.maxWaitSeconds]);
    expect(lines('permit-utilisation')).toEqual([thresholds.permitSaturation]);
    expect(lines('estimate-accuracy')).toEqual([thresholds.estimateBand.low, thresholds.estimateBand.high]);
    for (const alert of alerts) {
      const dashboard = dashboards.find((d) => d.uid === alert.panel.dashboardUid);
      expect(dashboard && panelsOf(dashboard).some((p) => p.key === alert.panel.key), alert.name).toBe(true);
    }
  });

  it('instantiate substitutes every variable and $__rate_interval, and leaves no `$` behind', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...dashboards.flatMap((d) => panelsOf(d).flatMap((p) => p.targets.map((t) => t.expr)))),
        fc.constantFrom('30s', '1m', '5m'),
        fc.stringMatching(/^[a-z0-9-]{1,12}$/),
        (expr, rateInterval, limiterName) => {
          const out = instantiate(expr, { rateInterval, limiter: limiterName });
          expect(out).not.toContain('$');
          if (expr.includes('$__rate_interval')) expect(out).toContain(`[${rateInterval}]`);
          if (expr.includes('$limiter')) expect(out).toContain(`limiter=~"${limiterName}"`);
          if (expr.includes('$job')) expect(out).toContain('job=~".*"');
        },
      ),
    );
  });
});

describe('generated Grafana dashboards', () => {
  for (const spec of dashboards) {
    it(`${spec.uid}: variables, descriptions, units and the alert annotation`, () => {
      const json = JSON.parse(files.get(`${generatedPaths.dashboardsDir}/${spec.uid}.json`)!);
      expect(json.uid).toBe(spec.uid);
      const variables = json.templating.list.map((v: { name: string }) => v.name);
      expect(variables).toEqual(expect.arrayContaining(['datasource', 'job', 'instance', 'limiter', 'agent']));
      const panels = json.panels.filter((p: { type: string }) => p.type !== 'row');
      expect(panels.length).toBe(panelsOf(spec).length);
      for (const panel of panels) {
        expect(panel.description, panel.title).toBeTruthy();
        expect(panel.fieldConfig.defaults.unit, panel.title).toBeTruthy();
        expect(panel.datasource.uid).toBe(`\${datasource}`);
        for (const target of panel.targets) expect(target.expr).toBeTruthy();
      }
      expect(json.annotations.list.some((a: { expr?: string }) => a.expr?.startsWith('ALERTS'))).toBe(true);
      expect(JSON.stringify(json)).not.toContain('_implementsDataqueryVariant');
    });
  }
});

describe('generated alert rules', () => {
  const promRules = parse(files.get(generatedPaths.rules)!);
  const grafanaRules = parse(files.get(generatedPaths.alerting)!);

  it('Prometheus and Grafana get the same alerts, each with severity, for, summary, description and runbook', () => {
    const promAlerts = promRules.groups.flatMap((g: { rules: { alert?: string }[] }) => g.rules.filter((r) => r.alert));
    const grafana = grafanaRules.groups[0].rules;
    expect(promAlerts.map((r: { alert: string }) => r.alert)).toEqual(alerts.map((a) => a.name));
    expect(grafana.map((r: { title: string }) => r.title)).toEqual(alerts.map((a) => a.name));
    for (const [i, spec] of alerts.entries()) {
      for (const rule of [promAlerts[i], grafana[i]]) {
        expect(rule.labels.severity).toBe(spec.severity);
        expect(rule.for).toBe(spec.for);
        expect(rule.annotations.summary).toBeTruthy();
        expect(rule.annotations.description).toBeTruthy();
        expect(rule.annotations.runbook_url).toMatch(/#[a-z]+$/);
      }
      expect(grafana[i].data[0].model.expr).toBe(spec.expr);
      expect(grafana[i].uid.length).toBeLessThanOrEqual(40);
    }
  });

  it('Grafana rules use the provisioned datasource uid and file-provisioning keys', () => {
    const datasource = parse(files.get(generatedPaths.datasource)!).datasources[0];
    expect(datasource.url).toBe('http://prometheus:9090');
    const group = grafanaRules.groups[0];
    expect(group).toMatchObject({ orgId: 1, interval: '1m' });
    expect(typeof group.folder).toBe('string');
    for (const rule of group.rules) {
      expect(rule.data[0].datasourceUid).toBe(datasource.uid);
      expect(rule).not.toHaveProperty('folderUID');
      expect(rule).not.toHaveProperty('ruleGroup');
      expect(rule.condition).toBe(rule.data.at(-1).refId);
      expect(typeof rule.panelId).toBe('number');
    }
  });

  it('recording rules follow level:metric:operations', () => {
    for (const rule of recordingRules) expect(rule.record).toMatch(/^[a-z_]+:[a-z_]+:[a-z0-9_]+$/);
  });

  it('every alert has a promtool case that fires it and one that keeps it silent', () => {
    for (const alert of alerts) {
      const checks = alertTestCases.flatMap((c) => c.checks).filter((c) => c.alert === alert.name);
      expect(checks.some((c) => c.firing.length > 0), `${alert.name} fires`).toBe(true);
      expect(checks.some((c) => c.firing.length === 0), `${alert.name} silent`).toBe(true);
    }
  });

  it('every alert has a runbook section in dashboards/README.md', () => {
    const readme = readFileSync(new URL('../../dashboards/README.md', import.meta.url), 'utf8');
    for (const alert of alerts) expect(readme, alert.name).toContain(`### ${alert.name}\n`);
  });
});
