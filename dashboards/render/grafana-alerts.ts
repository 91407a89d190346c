// Alert specs → Grafana-managed alert rules in the file-provisioning format (apiVersion 1).
// The rules are built with the foundation SDK (which follows Grafana's HTTP API) and mapped
// to the provisioning file's casing. Each rule runs the spec's PromQL as query A (it returns
// a series exactly while the condition holds), extras as B, C, ..., and fires on the math
// expression `$A == $A`, which is 1 for every series A returned (`is_number` would read
// better but older Grafana versions lack it): the same semantics as the Prometheus rule.
import * as alerting from '@grafana/grafana-foundation-sdk/alerting';
import * as expr from '@grafana/grafana-foundation-sdk/expr';
import * as prom from '@grafana/grafana-foundation-sdk/prometheus';
import type { AlertSpec, AnnotationTemplate, ValueFormat } from '../alerts.ts';
import type { DashboardsConfig } from '../config.ts';
import type { DashboardSpec } from '../panels/spec.ts';
import { panelIds } from './grafana-dashboard.ts';
import { alertLabels, runbookUrl } from './runbook.ts';

export const grafanaRuleGroup = 'quotascope-limiter';
const conditionRefId = 'Z';

const humanizer: Record<ValueFormat, string> = {
  number: 'humanize',
  duration: 'humanizeDuration',
  percent: 'humanizePercentage',
  rate: 'printf "%.3g"',
};

function extraRefId(index: number): string {
  return String.fromCharCode('B'.charCodeAt(0) + index);
}

function grafanaTemplateFor(alert: AlertSpec): AnnotationTemplate {
  const extraNames = Object.keys(alert.extras ?? {});
  return {
    value: (format) => `{{ ${humanizer[format]} $values.A.Value }}`,
    label: (name) => `{{ $labels.${name} }}`,
    extra: (name, format) => {
      const index = extraNames.indexOf(name);
      if (index < 0) throw new Error(`alert ${alert.name} has no extra value named ${name}`);
      return `{{ ${humanizer[format]} $values.${extraRefId(index)}.Value }}`;
    },
  };
}

/** A stable uid of at most 40 characters: `qs-` + the kebab-cased alert name. */
export function grafanaRuleUid(alertName: string): string {
  const uid = `qs-${alertName.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()}`;
  if (uid.length > 40) throw new Error(`Grafana rule uid ${uid} is longer than 40 characters`);
  return uid;
}

function promQuery(datasourceUid: string, refId: string, promql: string) {
  return new alerting.QueryBuilder(refId)
    .datasourceUid(datasourceUid)
    .relativeTimeRange({ from: 600, to: 0 })
    .model(new prom.DataqueryBuilder().expr(promql).refId(refId).instant());
}

function ruleOf(config: DashboardsConfig, alert: AlertSpec, dashboards: readonly DashboardSpec[]) {
  const uid = config.datasource.uid;
  const template = grafanaTemplateFor(alert);
  const builder = new alerting.RuleBuilder(alert.name)
    .uid(grafanaRuleUid(alert.name))
    .condition(conditionRefId)
    .withQuery(promQuery(uid, 'A', alert.expr));
  Object.values(alert.extras ?? {}).forEach((extra, i) => {
    builder.withQuery(promQuery(uid, extraRefId(i), extra.metric));
  });
  builder
    .withQuery(
      new alerting.QueryBuilder(conditionRefId).datasourceUid('__expr__').model(
        new expr.TypeMathBuilder()
          .expression('$A == $A')
          .refId(conditionRefId)
          .datasource({ type: '__expr__', uid: '__expr__' }),
      ),
    )
    .forDuration(alert.for)
    // No series means the condition does not hold: OK, as in Prometheus.
    .noDataState('OK')
    .execErrState('Error')
    .labels(alertLabels(config, alert.severity))
    .annotations({
      summary: alert.summary,
      description: alert.description(template),
      runbook_url: runbookUrl(config, alert.name),
    });
  const rule = JSON.parse(JSON.stringify(builder.build())) as alerting.Rule;
  const dashboard = dashboards.find((d) => d.uid === alert.panel.dashboardUid);
  const panelId = dashboard ? panelIds(dashboard).get(alert.panel.key) : undefined;
  if (panelId === undefined) {
    throw new Error(`alert ${alert.name} links to unknown panel ${alert.panel.dashboardUid}/${alert.panel.key}`);
  }
  // HTTP-API fields that the provisioning file sets on the group instead.
  const { folderUID: _folder, ruleGroup: _group, orgID: _org, ...rest } = rule;
  return { ...rest, dashboardUid: alert.panel.dashboardUid, panelId, isPaused: false };
}

/** The provisioning file `alerting/quotascope-alerts.yaml` as an object. */
export function grafanaAlertProvisioning(config: DashboardsConfig, alerts: readonly AlertSpec[], dashboards: readonly DashboardSpec[]) {
  return {
    apiVersion: 1,
    groups: [
      {
        orgId: 1,
        name: grafanaRuleGroup,
        folder: config.grafana.folderTitle,
        interval: '1m',
        rules: alerts.map((alert) => ruleOf(config, alert, dashboards)),
      },
    ],
  };
}
