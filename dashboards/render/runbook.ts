// The runbook link of an alert: its section under the configured base (by default the
// runbooks in dashboards/README.md).
import type { DashboardsConfig } from '../config.ts';

/** GitHub's anchor for a `### Name` heading is the lower-cased name. */
export function runbookUrl(config: DashboardsConfig, alertName: string): string {
  return `${config.alerts.runbookUrlBase}#${alertName.toLowerCase()}`;
}

/** The labels every rule of an alert carries: its severity and the configured extra labels. */
export function alertLabels(config: DashboardsConfig, severity: string): Record<string, string> {
  return { severity, ...config.alerts.labels };
}
