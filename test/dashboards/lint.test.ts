// mixtool's alerting-rule lint and Grafana's dashboard-linter rules (see lint.ts) pass on the
// generated rules and dashboards, for the default config and a user's; broken copies show
// each rule can fail.
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { type DashboardsConfig, defaultConfig } from '../../dashboards/config.ts';
import { generatedFiles, generatedPaths } from '../../dashboards/files.ts';
import { loadConfigFile } from '../../dashboards/generate.ts';
import { lintAlertingRules, lintDashboard, parseQuery } from './lint.ts';

const configs: [string, DashboardsConfig][] = [
  ['default config', defaultConfig],
  ['custom-stack.yaml', loadConfigFile(new URL('../../dashboards/examples/custom-stack.yaml', import.meta.url).pathname)],
];

function dashboardsOf(files: Map<string, string>) {
  return [...files].filter(([path]) => path.startsWith(`${generatedPaths.dashboardsDir}/`)).map(([, text]) => JSON.parse(text));
}

describe.each(configs)('lint with the %s', (_name, config) => {
  const files = generatedFiles(config);

  it('alerting rules: CamelCase names, a severity, a templated description and a one-sentence summary (mixtool)', () => {
    expect(lintAlertingRules(parse(files.get(generatedPaths.rules)!))).toEqual([]);
    expect(lintAlertingRules(parse(files.get(generatedPaths.prometheusRule)!).spec)).toEqual([]);
  });

  it('dashboards: templated datasource, job and instance variables, units, $__rate_interval, aggregated counters (dashboard-linter)', () => {
    for (const dashboard of dashboardsOf(files)) expect(lintDashboard(dashboard), dashboard.uid).toEqual([]);
  });

  it('the Grafana alert rules have the same names, severity and annotations', () => {
    const group = parse(files.get(generatedPaths.alerting)!).groups[0];
    const asRuleFile = { groups: [{ rules: group.rules.map((r: { title: string; data: { model: { expr?: string } }[] }) => ({ ...r, alert: r.title, expr: r.data[0].model.expr })) }] };
    expect(lintAlertingRules(asRuleFile)).toEqual([]);
  });
});

describe('the lint rules can fail', () => {
  const files = generatedFiles(defaultConfig);

  it('flags a lower-case alert name, a missing severity, a templated summary and an untemplated description', () => {
    const rules = parse(files.get(generatedPaths.rules)!);
    const alert = rules.groups[1].rules[0];
    alert.alert = 'limiter_acquire';
    alert.labels = {};
    alert.annotations.summary = 'Acquire time of {{ $labels.limiter }} is rising';
    alert.annotations.description = 'It rises.';
    const rule = (p: string) => p.slice(1, p.indexOf(']'));
    expect(lintAlertingRules(rules).map(rule)).toEqual([
      'alert-name-camelcase',
      'alert-severity-rule',
      'alert-description-templating',
      'alert-summary-templating',
      'alert-summary-style',
    ]);
  });

  it('flags a panel without unit or templated datasource, a fixed rate window, a bare counter and a missing instance variable', () => {
    const dashboard = JSON.parse(files.get(`${generatedPaths.dashboardsDir}/quotascope-limiter.json`)!);
    dashboard.templating.list = dashboard.templating.list.filter((v: { name: string }) => v.name !== 'instance');
    const panels = dashboard.panels.filter((p: { type: string }) => p.type === 'timeseries');
    delete panels[0].fieldConfig.defaults.unit;
    panels[1].datasource = { type: 'prometheus', uid: 'quotascope-prometheus' };
    panels[2].targets[0].expr = 'sum(rate(llm_limiter_calls_total[5m]))';
    panels[3].targets[0].expr = 'sum(llm_limiter_calls_total)';
    const rules = lintDashboard(dashboard).map((p) => p.slice(1, p.indexOf(']')));
    expect(rules).toEqual(['template-instance-rule', 'panel-units-rule', 'panel-datasource-rule', 'target-rate-interval-rule', 'target-counter-agg-rule']);
  });

  it('parseQuery reports a syntax error', () => {
    expect(parseQuery('sum(rate(x[5m])').error).toBeDefined();
    expect(parseQuery('sum by (le) (rate(x_bucket{job=~"$job"}[$__rate_interval]))').error).toBeUndefined();
  });
});
