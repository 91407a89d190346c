// Public entry of the dashboards part: the panel specs (for the run report), the alert and
// recording rule specs, and the shared thresholds and selectors.
export { type AlertSpec, alerts, type RecordingRuleSpec, recordingRules, records } from './alerts.ts';
export { acquireWarnSeconds, grafana, jobs, selectors, thresholds, windows } from './config.ts';
export { generatedPaths } from './files.ts';
export { dashboards } from './panels/index.ts';
export { limiterDashboard } from './panels/limiter.ts';
export { loadtestDashboard } from './panels/loadtest.ts';
export { mockProviderDashboard } from './panels/mockProvider.ts';
export {
  type DashboardSpec,
  instantiate,
  type PanelKind,
  type PanelSpec,
  panelsOf,
  type RowSpec,
  type TargetSpec,
  type ThresholdSpec,
  type VariableSpec,
  type VariableValues,
} from './panels/spec.ts';
