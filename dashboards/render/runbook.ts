// The runbook link of an alert: its section in dashboards/README.md.
import { grafana } from '../config.ts';

/** GitHub's anchor for a `### Name` heading is the lower-cased name. */
export function runbookUrl(alertName: string): string {
  return `${grafana.runbookBase}#${alertName.toLowerCase()}`;
}
