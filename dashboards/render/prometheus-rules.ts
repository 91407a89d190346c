// Alert and recording rule specs → a Prometheus rule file (the object; generate.ts writes YAML).
import type { AlertSpec, AnnotationTemplate, RecordingRuleSpec, ValueFormat } from '../alerts.ts';
import type { DashboardsConfig } from '../config.ts';
import { alertLabels, runbookUrl } from './runbook.ts';

const humanizer: Record<ValueFormat, string> = {
  number: 'humanize',
  duration: 'humanizeDuration',
  percent: 'humanizePercentage',
  rate: 'printf "%.3g"',
};

/** Annotation text in Prometheus' template language. */
export const prometheusTemplate: AnnotationTemplate = {
  value: (format) => `{{ $value | ${humanizer[format]} }}`,
  label: (name) => `{{ $labels.${name} }}`,
  extra: () => {
    throw new Error('extras are rendered per alert: use prometheusTemplateFor(alert)');
  },
};

/** Extras become a `query` template matching the alert's own labels. */
export function prometheusTemplateFor(alert: AlertSpec): AnnotationTemplate {
  return {
    ...prometheusTemplate,
    extra: (name, format) => {
      const extra = alert.extras?.[name];
      if (!extra) throw new Error(`alert ${alert.name} has no extra value named ${name}`);
      const matchers = extra.labels.map((label) => `${label}=%q`).join(',');
      const args = extra.labels.map((label) => `$labels.${label}`).join(' ');
      return `{{ with printf "${extra.metric}{${matchers}}" ${args} | query }}{{ . | first | value | ${humanizer[format]} }}{{ end }}`;
    },
  };
}

/** The rule groups: the recording rules, then the alerts that read them. */
export const ruleGroups = { records: 'quotascope-limiter.records', alerts: 'quotascope-limiter.alerts' } as const;

export interface PrometheusRuleFile {
  groups: {
    name: string;
    interval?: string;
    rules: Record<string, unknown>[];
  }[];
}

export function prometheusRuleFile(
  config: DashboardsConfig,
  recordingRules: readonly RecordingRuleSpec[],
  alerts: readonly AlertSpec[],
): PrometheusRuleFile {
  return {
    groups: [
      {
        name: ruleGroups.records,
        rules: recordingRules.map((rule) => ({ record: rule.record, expr: rule.expr })),
      },
      {
        name: ruleGroups.alerts,
        rules: alerts.map((alert) => {
          const template = prometheusTemplateFor(alert);
          return {
            alert: alert.name,
            expr: alert.expr,
            for: alert.for,
            labels: alertLabels(config, alert.severity),
            annotations: {
              summary: alert.summary,
              description: alert.description(template),
              runbook_url: runbookUrl(config, alert.name),
            },
          };
        }),
      },
    ],
  };
}
