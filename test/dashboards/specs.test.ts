// The dashboard and alert specs are complete and consistent, and the generated Grafana and
// Prometheus files carry them faithfully, for the default config and a user's.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import { buildAlerts, buildRecordingRules } from '../../dashboards/alerts.ts';
import { buildAlertTestCases } from '../../dashboards/alert-tests.ts';
import { type DashboardsConfig, defaultConfig } from '../../dashboards/config.ts';
import { generatedFiles, generatedPaths } from '../../dashboards/files.ts';
import { loadConfigFile } from '../../dashboards/generate.ts';
import { inlineRecordingRules } from '../../dashboards/render/grafana-alerts.ts';
import { agent, k6, mock } from '../../dashboards/metrics.ts';
import { buildDashboards } from '../../dashboards/panels/index.ts';
import { buildLimiterDashboard } from '../../dashboards/panels/limiter.ts';
import { instantiate, panelsOf } from '../../dashboards/panels/spec.ts';
import { parseQuery } from './lint.ts';

const customConfig = loadConfigFile(new URL('../../dashboards/examples/custom-stack.yaml', import.meta.url).pathname);
const configs: [string, DashboardsConfig][] = [
  ['default config', defaultConfig],
  ['custom-stack.yaml', customConfig],
];

const knownMetrics = (config: DashboardsConfig) =>
  new Set<string>([
    ...Object.values(limiterMetrics).map((d) => d.name),
    ...Object.values(agent),
    ...Object.values(mock),
    ...Object.values(k6),
    ...buildRecordingRules(config).map((r) => r.record),
    'up',
    'ALERTS',
  ]);

/** Metric names a PromQL expression reads (histogram suffixes removed), from Prometheus' own grammar. */
function metricsIn(expr: string): string[] {
  const parsed = parseQuery(expr);
  expect(parsed.error, expr).toBeUndefined();
  return parsed.selectors.map((s) => s.metric.replace(/_(bucket|sum|count)$/, ''));
}

describe.each(configs)('specs with the %s', (_name, config) => {
  const dashboards = buildDashboards(config);
  const alerts = buildAlerts(config);
  const recordingRules = buildRecordingRules(config);

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

  it('every query parses and uses only known metric names (limiter names come from the definitions)', () => {
    const known = knownMetrics(config);
    for (const dashboard of dashboards) {
      for (const panel of panelsOf(dashboard)) {
        for (const target of panel.targets) {
          const names = metricsIn(target.expr);
          expect(names.length, target.expr).toBeGreaterThan(0);
          for (const name of names) expect(known.has(name), `${name} in ${panel.key}`).toBe(true);
        }
      }
    }
    for (const rule of [...recordingRules.map((r) => r.expr), ...alerts.map((a) => a.expr)]) {
      for (const name of metricsIn(rule)) expect(known.has(name), `${name} in ${rule}`).toBe(true);
    }
  });

  it('acquire quantiles are of admitted calls; timeouts are their own series', () => {
    const acquire = `${limiterMetrics.acquireDuration.name}_bucket`;
    const quantileTargets = dashboards.flatMap((d) => panelsOf(d).flatMap((p) => p.targets)).filter((t) => t.expr.includes(acquire));
    expect(quantileTargets.length).toBeGreaterThan(0);
    for (const t of quantileTargets) expect(t.expr, t.legend).toContain('outcome="acquired"');
    const panel = panelsOf(buildLimiterDashboard(config)).find((p) => p.key === 'acquire-quantiles')!;
    const timeouts = panel.targets.find((t) => t.expr.includes('outcome="timeout"'));
    expect(timeouts?.unit).toBe('ops');
    const p95Record = recordingRules.find((r) => r.record.includes(':p95_rate'))!;
    expect(p95Record.expr).toContain('outcome="acquired"');
  });

  it('draws the alert thresholds, from each limiter\'s own maxWait and capacity, on the panels the alerts link to', () => {
    const byKey = new Map(panelsOf(buildLimiterDashboard(config)).map((p) => [p.key, p]));
    const references = (key: string) => byKey.get(key)?.targets.filter((t) => t.reference) ?? [];
    const t = config.thresholds;
    expect(references('acquire-quantiles').map((r) => [r.expr.startsWith(`${t.acquireWarnFractionOfMaxWait} * `), r.expr.includes(limiterMetrics.maxWait.name)])).toEqual([
      [true, true],
      [false, true],
    ]);
    expect(references('budget-level').map((r) => r.expr)).toEqual([expect.stringMatching(new RegExp(`^${t.budgetExhaustedFractionOfCapacity} \\* sum by \\(instance\\) \\(${limiterMetrics.budgetCapacity.name}\\{`))]);
    expect(byKey.get('permit-utilisation')?.thresholds?.map((x) => x.value)).toEqual([t.permitSaturation]);
    expect(byKey.get('estimate-accuracy')?.thresholds?.map((x) => x.value)).toEqual([t.estimateBand.low, t.estimateBand.high]);
    for (const alert of alerts) {
      const dashboard = dashboards.find((d) => d.uid === alert.panel.dashboardUid);
      expect(dashboard && panelsOf(dashboard).some((p) => p.key === alert.panel.key), alert.name).toBe(true);
    }
  });

  it('the token panel reads the limiters\' configured capacity, not the mock provider', () => {
    const panel = panelsOf(buildLimiterDashboard(config)).find((p) => p.key === 'tokens-per-minute')!;
    expect(panel.targets.some((t) => t.expr.includes(limiterMetrics.budgetCapacity.name))).toBe(true);
    for (const dashboard of dashboards.filter((d) => d.uid !== 'quotascope-mock-provider')) {
      for (const target of panelsOf(dashboard).flatMap((p) => p.targets)) expect(target.expr).not.toContain('mock_provider_');
    }
  });

  it('every selector of an agent-side metric in panels, variables and rules carries the configured agent selector', () => {
    const required = parseQuery(`m{${config.selectors.agent}}`).selectors[0].matchers;
    const agentSide = (metric: string) => metric.startsWith('llm_limiter_') || metric.startsWith('agent_');
    const exprs = [
      ...dashboards.flatMap((d) => panelsOf(d).flatMap((p) => p.targets.map((t) => t.expr))),
      ...dashboards.flatMap((d) => d.variables.map((v) => (v.selector ? `${v.metric}{${v.selector}}` : v.metric))),
      ...recordingRules.map((r) => r.expr),
      ...alerts.map((a) => a.expr),
    ];
    for (const expr of exprs) {
      for (const selector of parseQuery(expr).selectors.filter((s) => agentSide(s.metric))) {
        for (const m of required) expect(selector.matchers, `${selector.metric} in ${expr}`).toContainEqual(m);
      }
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

  it('every alert has a promtool case that fires it and one that keeps it silent', () => {
    const cases = buildAlertTestCases(config);
    for (const alert of alerts) {
      const checks = cases.flatMap((c) => c.checks).filter((c) => c.alert === alert.name);
      expect(checks.some((c) => c.firing.length > 0), `${alert.name} fires`).toBe(true);
      expect(checks.some((c) => c.firing.length === 0), `${alert.name} silent`).toBe(true);
    }
  });
});

describe.each(configs)('generated files with the %s', (_name, config) => {
  const files = generatedFiles(config);
  const dashboards = buildDashboards(config);
  const alerts = buildAlerts(config);

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

  it('reference lines are dashed and coloured, other-unit series sit on a right axis', () => {
    const json = JSON.parse(files.get(`${generatedPaths.dashboardsDir}/quotascope-limiter.json`)!);
    const panel = json.panels.find((p: { title: string }) => p.title.startsWith('Acquire time p50'));
    const overrides = panel.fieldConfig.overrides as { matcher: { id: string; options: string }; properties: { id: string; value: unknown }[] }[];
    const byRef = new Map(overrides.map((o) => [o.matcher.options, Object.fromEntries(o.properties.map((p) => [p.id, p.value]))]));
    const refOf = (pred: (t: { legendFormat: string }) => boolean) => panel.targets.find(pred).refId;
    expect(byRef.get(refOf((t) => t.legendFormat === 'timed out /s'))).toEqual({ unit: 'ops', 'custom.axisPlacement': 'right' });
    expect(byRef.get(refOf((t) => t.legendFormat === '{{limiter}} maxWait'))).toMatchObject({ color: { mode: 'fixed', fixedColor: 'red' } });
    expect(overrides.every((o) => o.matcher.id === 'byFrameRefID')).toBe(true);
  });

  it('Prometheus and Grafana get the same alerts, each with severity, extra labels, for, summary, description and runbook', () => {
    const promRules = parse(files.get(generatedPaths.rules)!);
    const grafanaRules = parse(files.get(generatedPaths.alerting)!);
    const promAlerts = promRules.groups.flatMap((g: { rules: { alert?: string }[] }) => g.rules.filter((r) => r.alert));
    const grafana = grafanaRules.groups[0].rules;
    expect(promAlerts.map((r: { alert: string }) => r.alert)).toEqual(alerts.map((a) => a.name));
    expect(grafana.map((r: { title: string }) => r.title)).toEqual(alerts.map((a) => a.name));
    for (const [i, spec] of alerts.entries()) {
      for (const rule of [promAlerts[i], grafana[i]]) {
        expect(rule.labels).toEqual({ severity: spec.severity, ...config.alerts.labels });
        expect(rule.for).toBe(spec.for);
        expect(rule.annotations.summary).toBe(spec.summary);
        expect(rule.annotations.description).toBeTruthy();
        expect(rule.annotations.runbook_url).toBe(`${config.alerts.runbookUrlBase}#${spec.name.toLowerCase()}`);
      }
      // Self-contained: the spec's PromQL with the recording rules it reads inlined.
      expect(grafana[i].data[0].model.expr).toBe(inlineRecordingRules(spec.expr, buildRecordingRules(config)));
      expect(grafana[i].uid.length).toBeLessThanOrEqual(40);
    }
  });

  it('Grafana rules use the configured datasource uid and file-provisioning keys', () => {
    const grafanaRules = parse(files.get(generatedPaths.alerting)!);
    const datasource = parse(files.get(generatedPaths.datasource)!).datasources[0];
    expect(datasource).toMatchObject({ uid: config.datasource.uid, url: config.datasource.url });
    const group = grafanaRules.groups[0];
    expect(group).toMatchObject({ orgId: 1, interval: '1m', folder: config.grafana.folderTitle });
    for (const rule of group.rules) {
      for (const query of rule.data.slice(0, -1)) expect(query.datasourceUid).toBe(config.datasource.uid);
      expect(rule.data.at(-1).datasourceUid).toBe('__expr__');
      expect(rule).not.toHaveProperty('folderUID');
      expect(rule).not.toHaveProperty('ruleGroup');
      expect(rule.condition).toBe(rule.data.at(-1).refId);
      expect(typeof rule.panelId).toBe('number');
    }
  });

  it('the PrometheusRule carries the rule file; each dashboard ConfigMap carries its JSON and the sidecar label', () => {
    const rule = parse(files.get(generatedPaths.prometheusRule)!);
    expect(rule).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { labels: config.kubernetes.labels } });
    expect(rule.metadata.namespace).toBe(config.kubernetes.namespace);
    expect(rule.spec).toEqual(parse(files.get(generatedPaths.rules)!));
    for (const spec of dashboards) {
      const map = parse(files.get(`${generatedPaths.dashboardConfigMapsDir}/${spec.uid}.yaml`)!);
      expect(map).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { labels: { grafana_dashboard: '1', ...config.kubernetes.labels } } });
      expect(map.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      expect(map.data[`${spec.uid}.json`]).toBe(files.get(`${generatedPaths.dashboardsDir}/${spec.uid}.json`));
    }
  });
});

describe('recording rules and runbooks', () => {
  it('recording rules follow level:metric:operations', () => {
    for (const rule of buildRecordingRules(defaultConfig)) expect(rule.record).toMatch(/^[a-z_]+:[a-z_]+:[a-z0-9_]+$/);
  });

  it('every alert has a runbook section in dashboards/README.md', () => {
    const readme = readFileSync(new URL('../../dashboards/README.md', import.meta.url), 'utf8');
    for (const alert of buildAlerts(defaultConfig)) expect(readme, alert.name).toContain(`### ${alert.name}\n`);
  });
});

describe('the calls-in-flight panel', () => {
  it('is one panel, flagged in its spec, and it draws the permits-in-use gauge the report marks as scraped', () => {
    const flagged = buildDashboards(defaultConfig).flatMap((d) => panelsOf(d).filter((p) => p.callsInFlight).map((p) => ({ uid: d.uid, panel: p })));
    expect(flagged.map((f) => `${f.uid}/${f.panel.key}`)).toEqual(['quotascope-limiter/littles-law']);
    expect(flagged[0].panel.targets.some((t) => t.expr.includes(limiterMetrics.permitsInUse.name))).toBe(true);
  });
});
