// The plain-data form of a dashboard: what each panel shows (title, unit, description,
// expressions, legend), free of Grafana. The generator turns it into Grafana JSON; the run
// report renders the same panels from a run's Prometheus data with instantiate().

export type PanelKind = 'timeseries' | 'stat' | 'heatmap';

/** The values every time-series legend shows per series (Grafana reducer ids). */
export const LEGEND_CALCS = ['mean', 'max', 'lastNotNull'] as const;

export interface TargetSpec {
  /** PromQL; may use the dashboard variables ($job, $instance, $limiter, $agent, $scenario) and $__rate_interval. */
  readonly expr: string;
  /** Grafana legend format, e.g. `{{instance}}`. */
  readonly legend: string;
  /** A threshold computed from a metric (e.g. each limiter's maxWait): drawn as a dashed line of this color. */
  readonly reference?: ThresholdSpec['color'];
  /** A unit other than the panel's: the series is drawn on a right-hand axis in this unit. */
  readonly unit?: string;
}

export interface ThresholdSpec {
  readonly value: number;
  readonly color: 'orange' | 'red';
}

export interface PanelSpec {
  /** Stable id, unique within its dashboard (also the Grafana panel id order). */
  readonly key: string;
  readonly title: string;
  readonly description: string;
  /** A Grafana unit id: s, short, reqps, percentunit, ... */
  readonly unit: string;
  readonly kind: PanelKind;
  readonly targets: readonly TargetSpec[];
  /** Drawn as threshold lines; equal to the alert thresholds where one exists. */
  readonly thresholds?: readonly ThresholdSpec[];
  readonly min?: number;
  readonly max?: number;
  /** Panel width in grid columns (24 = full width); 12 by default. */
  readonly span?: number;
  /**
   * Why this panel may legitimately show no data in a quiet run (no 429s, no faults, ...).
   * The live query test still requires its queries to evaluate without error.
   */
  readonly quietRunEmpty?: string;
  /**
   * The panel of calls in flight: the run report adds the run's planned calls in flight and
   * the random-time permit samples to it, and marks its scraped gauge as scraped.
   */
  readonly callsInFlight?: true;
}

export interface RowSpec {
  readonly title: string;
  readonly panels: readonly PanelSpec[];
}

export interface VariableSpec {
  readonly name: string;
  readonly label: string;
  /** The metric whose label values populate the variable. */
  readonly metric: string;
  readonly labelName: string;
  /** Selector restricting the metric, may reference earlier variables. */
  readonly selector?: string;
}

export interface DashboardSpec {
  readonly uid: string;
  readonly title: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly variables: readonly VariableSpec[];
  readonly rows: readonly RowSpec[];
}

/** Values for the dashboard variables when a query runs outside Grafana. */
export interface VariableValues {
  /** Replaces $__rate_interval (Grafana computes it from the scrape interval). */
  readonly rateInterval: string;
  /** Regex values of the label variables; `.*` (match everything) when absent. */
  readonly [variable: string]: string;
}

/**
 * The expression with the dashboard variables substituted, ready for Prometheus' HTTP API.
 * Unset variables match everything, like Grafana's "All".
 */
export function instantiate(expr: string, values: VariableValues): string {
  return expr
    .replaceAll('$__rate_interval', values.rateInterval)
    .replace(/\$([a-z_]+)/g, (_match, name: string) => values[name] ?? '.*');
}

/** Every panel of a dashboard, in order. */
export function panelsOf(dashboard: DashboardSpec): PanelSpec[] {
  return dashboard.rows.flatMap((row) => row.panels);
}
