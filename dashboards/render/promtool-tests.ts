// Alert test cases → a `promtool test rules` file. Expected annotations are the spec's own
// summary/description rendered with the expected values, so a template change is tested too.
import type { AlertSpec, AnnotationTemplate } from '../alerts.ts';
import type { AlertTestCase, ExpectedAlert } from '../alert-tests.ts';
import type { DashboardsConfig } from '../config.ts';
import { ruleGroups } from './prometheus-rules.ts';
import { alertLabels, runbookUrl } from './runbook.ts';

function expectedTemplate(expected: ExpectedAlert): AnnotationTemplate {
  return {
    value: () => expected.value,
    label: (name) => {
      const value = expected.labels[name];
      if (value === undefined) throw new Error(`expected alert has no label ${name}`);
      return value;
    },
    extra: (name) => {
      const value = expected.extras?.[name];
      if (value === undefined) throw new Error(`expected alert has no extra value ${name}`);
      return value;
    },
  };
}

export function promtoolTestFile(
  config: DashboardsConfig,
  ruleFile: string,
  cases: readonly AlertTestCase[],
  alerts: readonly AlertSpec[],
) {
  const specOf = (name: string): AlertSpec => {
    const spec = alerts.find((a) => a.name === name);
    if (!spec) throw new Error(`alert test names unknown alert ${name}`);
    return spec;
  };
  return {
    rule_files: [ruleFile],
    evaluation_interval: '1m',
    // promtool evaluates groups in map order unless told; records first, so an alert reads the
    // records of its own evaluation time, not the previous one, and a check's minute is exact.
    group_eval_order: [ruleGroups.records, ruleGroups.alerts],
    tests: cases.map((testCase) => ({
      name: testCase.name,
      interval: '1m',
      input_series: testCase.series.map((s) => ({ series: s.series, values: s.values })),
      alert_rule_test: testCase.checks.map((check) => {
        const spec = specOf(check.alert);
        return {
          eval_time: `${check.atMinute}m`,
          alertname: check.alert,
          exp_alerts: check.firing.map((expected) => {
            const template = expectedTemplate(expected);
            return {
              exp_labels: { ...expected.labels, ...alertLabels(config, spec.severity) },
              exp_annotations: {
                summary: spec.summary,
                description: spec.description(template),
                runbook_url: runbookUrl(config, spec.name),
              },
            };
          }),
        };
      }),
    })),
  };
}
