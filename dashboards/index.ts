// Public entry of the dashboards part: the config (schema, defaults, selectors), the panel
// specs (for the run report), the alert and recording rule specs, and the generator. The
// plain `dashboards`, `alerts`, ... values are those of quotascope's own stack (the default config).
import { buildAlerts, buildRecordingRules, recordsOf } from './alerts.ts';
import { defaultConfig } from './config.ts';
import { buildDashboards } from './panels/index.ts';
import { buildLimiterDashboard } from './panels/limiter.ts';
import { buildLoadtestDashboard } from './panels/loadtest.ts';

export { type AlertName, alertNames } from './alert-names.ts';
export { type AlertSpec, buildAlerts, buildRecordingRules, type RecordingRuleSpec, recordsOf } from './alerts.ts';
export { buildAlertTestCases } from './alert-tests.ts';
export {
  type DashboardsConfig,
  DashboardsConfigError,
  type DashboardsConfigInput,
  dashboardsConfigSchema,
  defaultConfig,
  jobs,
  parseDashboardsConfig,
  type Selectors,
  selectorsOf,
} from './config.ts';
export { generatedFiles, generatedPaths } from './files.ts';
export { type DashboardsArgs, loadConfigFile, runDashboards } from './generate.ts';
export { agent as agentMetrics, k6 as k6Metrics, limiter as limiterMetricNames, mock as mockMetrics } from './metrics.ts';
export { buildDashboards } from './panels/index.ts';
export { buildLimiterDashboard } from './panels/limiter.ts';
export { buildLoadtestDashboard } from './panels/loadtest.ts';
export { buildMockProviderDashboard } from './panels/mock-provider.ts';
export {
  type DashboardSpec,
  instantiate,
  LEGEND_CALCS,
  type PanelKind,
  type PanelSpec,
  panelsOf,
  type RowSpec,
  type TargetSpec,
  type ThresholdSpec,
  type VariableSpec,
  type VariableValues,
} from './panels/spec.ts';

export const dashboards = buildDashboards(defaultConfig);
export const limiterDashboard = buildLimiterDashboard(defaultConfig);
export const loadtestDashboard = buildLoadtestDashboard(defaultConfig);
export const alerts = buildAlerts(defaultConfig);
export const recordingRules = buildRecordingRules(defaultConfig);
export const records = recordsOf(defaultConfig);
