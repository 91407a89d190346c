// Alert specs → Grafana-managed alert rules in the file-provisioning format (apiVersion 1).
// The rules are built with the foundation SDK (which follows Grafana's HTTP API) and mapped
// to the provisioning file's casing. They are self-contained: every recording rule a spec
// reads is inlined (a range over one becomes a subquery at the group's interval), so the
// rules fire in a Grafana that loads nothing else. Each rule runs the spec's PromQL as query A
// (it returns a series exactly while the condition holds, for the annotations), extras as
// B, C, ..., and the condition on query P: 1 for each series A returned, 0 for every other
// series of the spec's `present` (each limiter, replica or target reported), so "the
// condition is false" (Normal) differs from "nothing is reported" (the spec's no-data state).
import * as alerting from '@grafana/grafana-foundation-sdk/alerting';
import * as expr from '@grafana/grafana-foundation-sdk/expr';
import * as prom from '@grafana/grafana-foundation-sdk/prometheus';
import type { AlertSpec, AnnotationTemplate, RecordingRuleSpec, ValueFormat } from '../alerts.ts';
import type { DashboardsConfig } from '../config.ts';
import type { DashboardSpec } from '../panels/spec.ts';
import { panelIds } from './grafana-dashboard.ts';
import { alertLabels, runbookUrl } from './runbook.ts';

export const grafanaRuleGroup = 'quotascope-limiter';
/** How often the group runs: also the step of the subqueries that stand in for recorded ranges. */
export const GRAFANA_EVALUATION_INTERVAL = '1m';
const conditionRefId = 'Z';
const indicatorRefId = 'P';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `expr` with every recorded series replaced by the expression that records it: `name` →
 * `(expr)`, `name[range]` → `(expr)[range:interval]` (a subquery), until none is left.
 */
export function inlineRecordingRules(expr: string, rules: readonly RecordingRuleSpec[], interval = GRAFANA_EVALUATION_INTERVAL): string {
  // Longest names first: one recorded name can be the start of another.
  const ordered = [...rules].sort((a, b) => b.record.length - a.record.length);
  let out = expr;
  for (let pass = 0; pass <= rules.length; pass++) {
    let changed = false;
    for (const rule of ordered) {
      const pattern = new RegExp(`${escapeRegExp(rule.record)}(?![A-Za-z0-9_:])(\\[([^\\]]+)\\])?`, 'g');
      out = out.replace(pattern, (_match, range: string | undefined, window: string | undefined) => {
        changed = true;
        return range ? `(${rule.expr})[${window}:${interval}]` : `(${rule.expr})`;
      });
    }
    if (!changed) return out;
  }
  throw new Error(`recording rules refer to each other in a cycle: ${expr}`);
}

/** 1 for each series the alert expression returns, 0 for each other thing the alert watches. */
function indicatorQuery(alert: AlertSpec, rules: readonly RecordingRuleSpec[]): string {
  return `(\n${inlineRecordingRules(alert.expr, rules)}\n) >bool -Inf\nor\n(\n${inlineRecordingRules(alert.present, rules)}\n)`;
}

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

function ruleOf(config: DashboardsConfig, alert: AlertSpec, dashboards: readonly DashboardSpec[], rules: readonly RecordingRuleSpec[]) {
  const uid = config.datasource.uid;
  const template = grafanaTemplateFor(alert);
  const builder = new alerting.RuleBuilder(alert.name)
    .uid(grafanaRuleUid(alert.name))
    .condition(conditionRefId)
    .withQuery(promQuery(uid, 'A', inlineRecordingRules(alert.expr, rules)));
  Object.values(alert.extras ?? {}).forEach((extra, i) => {
    builder.withQuery(promQuery(uid, extraRefId(i), inlineRecordingRules(extra.metric, rules)));
  });
  builder
    .withQuery(promQuery(uid, indicatorRefId, indicatorQuery(alert, rules)))
    .withQuery(
      new alerting.QueryBuilder(conditionRefId).datasourceUid('__expr__').model(
        new expr.TypeMathBuilder()
          .expression(`$${indicatorRefId} > 0`)
          .refId(conditionRefId)
          .datasource({ type: '__expr__', uid: '__expr__' }),
      ),
    )
    .forDuration(alert.for)
    // Nothing reported at all: the spec's choice (dashboards/README.md lists each and why).
    .noDataState(alert.noData.state)
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

/**
 * The provisioning file `alerting/quotascope-alerts.yaml` as an object: the alerts with the
 * recording rules they read inlined (`rules`: every recording rule the specs may name).
 */
export function grafanaAlertProvisioning(config: DashboardsConfig, alerts: readonly AlertSpec[], dashboards: readonly DashboardSpec[], rules: readonly RecordingRuleSpec[]) {
  return {
    apiVersion: 1,
    groups: [
      {
        orgId: 1,
        name: grafanaRuleGroup,
        folder: config.grafana.folderTitle,
        interval: GRAFANA_EVALUATION_INTERVAL,
        rules: alerts.map((alert) => ruleOf(config, alert, dashboards, rules)),
      },
    ],
  };
}
