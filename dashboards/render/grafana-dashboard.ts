// Dashboard spec → Grafana v1 dashboard JSON, through the foundation SDK's builders.
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dash from '@grafana/grafana-foundation-sdk/dashboard';
import * as heatmap from '@grafana/grafana-foundation-sdk/heatmap';
import * as prom from '@grafana/grafana-foundation-sdk/prometheus';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import { alertNames } from '../alert-names.ts';
import { type DashboardSpec, LEGEND_CALCS, type PanelSpec, type VariableSpec } from '../panels/spec.ts';

/** Every query goes through the dashboard's datasource variable (a Grafana `${datasource}` reference). */
const datasource = { type: 'prometheus', uid: `\${datasource}` };

/** Firing alerts of ours (by name) from Prometheus' ALERTS series, drawn on every panel. */
export const alertAnnotationExpr = `ALERTS{alertstate="firing", alertname=~"${alertNames.join('|')}"}`;

function target(expr: string, legend: string, refId: string, format = prom.PromQueryFormat.TimeSeries) {
  return new prom.DataqueryBuilder()
    .expr(expr)
    .legendFormat(legend)
    .refId(refId)
    .datasource(datasource)
    .editorMode(prom.QueryEditorMode.Code)
    .format(format)
    .range();
}

function thresholdsOf(panel: PanelSpec) {
  return new dash.ThresholdsConfigBuilder().mode(dash.ThresholdsMode.Absolute).steps([
    { value: null as unknown as number, color: 'green' },
    ...(panel.thresholds ?? []).map((t) => ({ value: t.value, color: t.color })),
  ]);
}

function refId(index: number): string {
  return String.fromCharCode('A'.charCodeAt(0) + index);
}

function timeseriesPanel(panel: PanelSpec) {
  const builder = new timeseries.PanelBuilder()
    .legend(
      new common.VizLegendOptionsBuilder()
        .displayMode(common.LegendDisplayMode.Table)
        .placement(common.LegendPlacement.Bottom)
        .showLegend(true)
        .calcs([...LEGEND_CALCS]),
    )
    .lineWidth(1)
    .fillOpacity(10)
    .spanNulls(false);
  if (panel.thresholds?.length) {
    builder.thresholdsStyle(new common.GraphThresholdsStyleConfigBuilder().mode(common.GraphThresholdsStyleMode.Dashed));
  }
  panel.targets.forEach((t, i) => {
    builder.withTarget(target(t.expr, t.legend, refId(i)));
    const properties = [
      ...(t.reference
        ? [
            { id: 'color', value: { mode: 'fixed', fixedColor: t.reference } },
            { id: 'custom.lineStyle', value: { fill: 'dash', dash: [10, 10] } },
            { id: 'custom.fillOpacity', value: 0 },
          ]
        : []),
      ...(t.unit ? [{ id: 'unit', value: t.unit }, { id: 'custom.axisPlacement', value: 'right' }] : []),
    ];
    if (properties.length > 0) builder.overrideByQuery(refId(i), properties);
  });
  return builder;
}

function heatmapPanel(panel: PanelSpec) {
  const builder = new heatmap.PanelBuilder()
    .calculate(false)
    .yAxis(new heatmap.YAxisConfigBuilder().unit(panel.unit))
    .cellValues(new heatmap.CellValuesBuilder().unit('reqps'));
  panel.targets.forEach((t, i) => {
    builder.withTarget(target(t.expr, t.legend, refId(i), prom.PromQueryFormat.Heatmap));
  });
  return builder;
}

function panelBuilder(panel: PanelSpec, id: number) {
  const builder = panel.kind === 'heatmap' ? heatmapPanel(panel) : timeseriesPanel(panel);
  builder
    .id(id)
    .title(panel.title)
    .description(panel.description)
    .datasource(datasource)
    .unit(panel.unit)
    .span(panel.span ?? 12)
    .height(8)
    .thresholds(thresholdsOf(panel));
  if (panel.min !== undefined) builder.min(panel.min);
  if (panel.max !== undefined) builder.max(panel.max);
  return builder;
}

/** `label_values(metric{selector}, label)`: the legacy variable query Grafana's Prometheus source accepts. */
export function variableQuery(variable: VariableSpec): string {
  const metric = variable.selector ? `${variable.metric}{${variable.selector}}` : variable.metric;
  return `label_values(${metric}, ${variable.labelName})`;
}

function variableBuilder(variable: VariableSpec) {
  const query = variableQuery(variable);
  return new dash.QueryVariableBuilder(variable.name)
    .label(variable.label)
    .datasource(datasource)
    .query(query)
    .definition(query)
    .refresh(dash.VariableRefresh.OnTimeRangeChanged)
    .multi(true)
    .includeAll(true)
    // Grafana's dashboard linter wants `.+` for job and instance (both always set on a scrape).
    .allValue(variable.name === 'job' || variable.name === 'instance' ? '.+' : '.*')
    .current({ selected: true, text: 'All', value: '$__all' })
    .sort(dash.VariableSort.AlphabeticalAsc);
}

/** The Grafana panel id of each panel key: rows and panels are numbered in layout order. */
export function panelIds(spec: DashboardSpec): Map<string, number> {
  const ids = new Map<string, number>();
  let next = 1;
  for (const row of spec.rows) {
    next++; // the row's own id
    for (const panel of row.panels) ids.set(panel.key, next++);
  }
  return ids;
}

export function grafanaDashboard(spec: DashboardSpec): dash.Dashboard {
  const annotation = new dash.AnnotationQueryBuilder()
    .name('Firing alerts')
    .datasource(datasource)
    .enable(true)
    .iconColor('red')
    .expr(alertAnnotationExpr)
    .titleFormat('{{alertname}}')
    .textFormat('{{severity}} {{limiter}} {{instance}}')
    .tagKeys('alertname,severity')
    .step('30s');
  const builder = new dash.DashboardBuilder(spec.title)
    .uid(spec.uid)
    .description(spec.description)
    .tags([...spec.tags])
    .refresh('10s')
    .time({ from: 'now-30m', to: 'now' })
    .timezone('browser')
    .tooltip(dash.DashboardCursorSync.Crosshair)
    .readonly()
    .withVariable(new dash.DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'))
    .annotation(annotation)
    .link(
      new dash.DashboardLinkBuilder('quotascope')
        .type(dash.DashboardLinkType.Dashboards)
        .tags(['quotascope'])
        .asDropdown(true)
        .includeVars(true)
        .keepTime(true),
    );
  for (const variable of spec.variables) builder.withVariable(variableBuilder(variable));

  let id = 1;
  for (const row of spec.rows) {
    builder.withRow(new dash.RowBuilder(row.title).id(id++));
    for (const panel of row.panels) builder.withPanel(panelBuilder(panel, id++));
  }
  const built = builder.build();
  // Classic placement (in the dashboard's controls bar) instead of Grafana 12's menu.
  for (const a of built.annotations?.list ?? []) delete a.placement;
  for (const l of built.links ?? []) delete l.placement;
  return built;
}
