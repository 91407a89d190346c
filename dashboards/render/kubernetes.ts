// Kubernetes shapes of the same output: a PrometheusRule for the Prometheus Operator and one
// ConfigMap per dashboard for Grafana's dashboard sidecar (which loads every ConfigMap
// labelled grafana_dashboard="1"). One ConfigMap each keeps every object well under the
// 256 KiB that `kubectl apply` can annotate.
import type { DashboardsConfig } from '../config.ts';
import type { PrometheusRuleFile } from './prometheus-rules.ts';

/** The label Grafana's sidecar (kiwigrid k8s-sidecar, as in the grafana Helm chart) selects dashboards by. */
export const sidecarDashboardLabel = { grafana_dashboard: '1' } as const;

function metadata(config: DashboardsConfig, name: string, labels: Record<string, string> = {}) {
  const { namespace, labels: common } = config.kubernetes;
  return {
    name,
    ...(namespace ? { namespace } : {}),
    labels: { 'app.kubernetes.io/part-of': 'quotascope', ...common, ...labels },
  };
}

export function prometheusRule(config: DashboardsConfig, rules: PrometheusRuleFile) {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: metadata(config, `${config.kubernetes.namePrefix}-rules`),
    spec: rules,
  };
}

/** A ConfigMap holding one dashboard's JSON under `<uid>.json`. */
export function dashboardConfigMap(config: DashboardsConfig, uid: string, json: string) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadata(config, `${config.kubernetes.namePrefix}-dashboard-${uid}`.slice(0, 253), sidecarDashboardLabel),
    data: { [`${uid}.json`]: json },
  };
}
