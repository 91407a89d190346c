// The lint rules mixtool applies to alerting rules and Grafana's dashboard-linter to
// dashboards, re-implemented over the generated files (neither tool is packaged for this
// machine). PromQL is parsed with Prometheus' own grammar (@prometheus-io/lezer-promql).
import { parser } from '@prometheus-io/lezer-promql';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

/** What dashboard-linter substitutes for $__rate_interval before parsing. */
const rateIntervalStandIn = '8869990787ms';

export interface VectorSelector {
  readonly metric: string;
  readonly matchers: readonly { label: string; op: string; value: string }[];
}

export interface ParsedQuery {
  readonly error?: string;
  readonly selectors: readonly VectorSelector[];
  /** Function name around each range selector (`rate`, `increase`, ...) and its range. */
  readonly ranges: readonly { fn: string | undefined; range: string; metric: string }[];
}

function unquote(literal: string): string {
  return literal.startsWith('"') ? (JSON.parse(literal) as string) : literal;
}

function functionAround(node: SyntaxNode, text: string): string | undefined {
  const body = node.parent;
  if (body?.name !== 'FunctionCallBody') return undefined;
  const ident = body.parent?.getChild('FunctionIdentifier');
  return ident ? text.slice(ident.from, ident.to) : undefined;
}

/** Parses a query after substituting $__rate_interval; other $variables sit inside strings. */
export function parseQuery(expr: string): ParsedQuery {
  const text = expr.replaceAll('$__rate_interval', rateIntervalStandIn);
  const tree = parser.parse(text);
  const selectors: VectorSelector[] = [];
  const ranges: { fn: string | undefined; range: string; metric: string }[] = [];
  let error: string | undefined;
  tree.iterate({
    enter: (ref) => {
      if (ref.type.isError && error === undefined) error = `syntax error at ${ref.from}: ${text.slice(ref.from, ref.from + 20)}`;
      if (ref.name === 'VectorSelector') {
        const ident = ref.node.getChild('Identifier');
        const matchers = (ref.node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []).map((m) => {
          const name = m.getChild('LabelName')!;
          const op = m.getChild('MatchOp')!;
          const value = m.getChild('StringLiteral')!;
          return { label: text.slice(name.from, name.to), op: text.slice(op.from, op.to), value: unquote(text.slice(value.from, value.to)) };
        });
        const nameMatcher = matchers.find((m) => m.label === '__name__');
        selectors.push({ metric: ident ? text.slice(ident.from, ident.to) : (nameMatcher?.value ?? ''), matchers });
      }
      if (ref.name === 'MatrixSelector') {
        const vector = ref.node.getChild('VectorSelector');
        const ident = vector?.getChild('Identifier');
        const open = text.lastIndexOf('[', ref.to);
        ranges.push({
          fn: functionAround(ref.node, text),
          range: text.slice(open + 1, ref.to - 1),
          metric: ident ? text.slice(ident.from, ident.to) : '',
        });
      }
    },
  });
  return { error, selectors, ranges };
}

// --- mixtool: alerting rule guidelines -------------------------------------------------

const camelCase = /^([A-Z]+[a-z0-9]+)+$/;
const goTemplate = /\{\{.+\}\}/;
const sentence = /^[A-Z].+\.$/;

interface RuleFileLike {
  groups: { rules: { alert?: string; record?: string; expr: string; labels?: Record<string, string>; annotations?: Record<string, string> }[] }[];
}

/** mixtool's lint of alerting rules: CamelCase names, severity, summary and description style. */
export function lintAlertingRules(file: RuleFileLike): string[] {
  const problems: string[] = [];
  for (const rule of file.groups.flatMap((g) => g.rules)) {
    if (rule.alert === undefined) continue;
    const name = rule.alert;
    if (!camelCase.test(name)) problems.push(`[alert-name-camelcase] ${name} is not in camel case`);
    const severity = rule.labels?.severity;
    if (severity !== 'warning' && severity !== 'critical' && severity !== 'info') {
      problems.push(`[alert-severity-rule] ${name} severity must be warning, critical or info, is ${severity}`);
    }
    const description = rule.annotations?.description;
    if (description === undefined) problems.push(`[alert-description-missing-rule] ${name} has no description`);
    else if (!goTemplate.test(description)) problems.push(`[alert-description-templating] ${name} description uses no template`);
    const summary = rule.annotations?.summary;
    if (summary === undefined) problems.push(`[alert-summary-missing-rule] ${name} has no summary`);
    else {
      if (goTemplate.test(summary)) problems.push(`[alert-summary-templating] ${name} summary must not use templates`);
      if (!sentence.test(summary)) problems.push(`[alert-summary-style] ${name} summary must start with a capital letter and end with a period`);
    }
  }
  return problems;
}

// --- dashboard-linter ------------------------------------------------------------------

interface Ref {
  type?: string;
  uid?: string;
}
interface Template {
  name: string;
  type: string;
  label?: string;
  query?: unknown;
  datasource?: Ref;
  multi?: boolean;
  allValue?: string;
  refresh?: number;
}
interface Panel {
  type: string;
  title?: string;
  description?: string;
  datasource?: Ref;
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: { expr?: string; datasource?: Ref }[];
}
interface DashboardLike {
  title: string;
  editable?: boolean;
  templating: { list: Template[] };
  panels: Panel[];
}

const templated = new Set(['$datasource', `\${datasource}`]);
const panelsWithUnits = new Set(['stat', 'singlestat', 'graph', 'table', 'timeseries', 'gauge']);
const panelsWithQueries = new Set(['stat', 'singlestat', 'graph', 'table', 'timeseries', 'gauge', 'heatmap', 'bargauge', 'barchart']);

/** dashboard-linter's template-job-rule / template-instance-rule. */
function checkLabelTemplate(d: DashboardLike, name: string, problems: string[]): void {
  const t = d.templating.list.find((x) => x.name === name);
  if (!t) {
    problems.push(`[template-${name}-rule] ${d.title} is missing the ${name} template`);
    return;
  }
  if (!templated.has(t.datasource?.uid ?? '')) problems.push(`[template-${name}-rule] ${d.title} ${name} template does not use $datasource`);
  if (t.type !== 'query') problems.push(`[template-${name}-rule] ${d.title} ${name} template is not a query`);
  if (!t.multi) problems.push(`[template-${name}-rule] ${d.title} ${name} template is not multi select`);
  if (t.allValue !== '.+') problems.push(`[template-${name}-rule] ${d.title} ${name} template allValue should be .+, is ${t.allValue}`);
}

/** The dashboard-linter rules: templated datasource, job and instance templates, units, $__rate_interval, counters aggregated. */
export function lintDashboard(d: DashboardLike): string[] {
  const problems: string[] = [];
  const datasources = d.templating.list.filter((t) => t.type === 'datasource');
  if (datasources.length === 0) problems.push(`[template-datasource-rule] ${d.title} has no templated datasource`);
  for (const t of datasources) {
    if (t.name !== 'datasource' && t.name !== 'prometheus_datasource') problems.push(`[template-datasource-rule] ${d.title} datasource variable is named ${t.name}`);
    if (t.query !== 'prometheus') problems.push(`[template-datasource-rule] ${d.title} datasource variable is not for prometheus`);
  }
  checkLabelTemplate(d, 'job', problems);
  checkLabelTemplate(d, 'instance', problems);
  for (const t of d.templating.list.filter((x) => x.type === 'query')) {
    if (t.refresh !== 2) problems.push(`[template-on-time-change-reload-rule] ${d.title} $${t.name} does not refresh on time range change`);
    const query = typeof t.query === 'string' ? t.query : '';
    const call = /^(label_names|label_values|metrics|query_result)\((.+)\)$/.exec(query);
    if (!call) problems.push(`[template-label-promql-rule] ${d.title} $${t.name} has invalid query ${query}`);
    else {
      const inner = call[1] === 'label_values' ? call[2].replace(/,\s*[a-zA-Z_]+$/, '') : call[2];
      const parsed = parseQuery(inner);
      if (parsed.error) problems.push(`[template-label-promql-rule] ${d.title} $${t.name}: ${parsed.error}`);
    }
  }
  if (d.editable) problems.push(`[uneditable-dashboard] ${d.title} is editable`);
  for (const p of d.panels.filter((x) => x.type !== 'row')) {
    const where = `${d.title} / ${p.title}`;
    if (!p.title || !p.description) problems.push(`[panel-title-description-rule] ${where} has no title or description`);
    if (panelsWithUnits.has(p.type) && !p.fieldConfig?.defaults?.unit) problems.push(`[panel-units-rule] ${where} has no unit`);
    if (!templated.has(p.datasource?.uid ?? '')) problems.push(`[panel-datasource-rule] ${where} uses datasource ${p.datasource?.uid}`);
    if (panelsWithQueries.has(p.type) && (p.targets ?? []).length === 0) problems.push(`[panel-no-targets-rule] ${where} has no targets`);
    for (const target of p.targets ?? []) {
      if (target.datasource && !templated.has(target.datasource.uid ?? '')) problems.push(`[panel-datasource-rule] ${where} target uses ${target.datasource.uid}`);
      const parsed = parseQuery(target.expr ?? '');
      if (parsed.error) {
        problems.push(`[target-promql-rule] ${where}: ${parsed.error} in ${target.expr}`);
        continue;
      }
      for (const r of parsed.ranges) {
        if ((r.fn === 'rate' || r.fn === 'irate') && r.range !== rateIntervalStandIn) {
          problems.push(`[target-rate-interval-rule] ${where}: ${r.fn} over [${r.range}] instead of $__rate_interval`);
        }
      }
      for (const s of parsed.selectors.filter((x) => x.metric.endsWith('_total'))) {
        const ranged = parsed.ranges.find((r) => r.metric === s.metric && ['rate', 'irate', 'increase'].includes(r.fn ?? ''));
        if (!ranged) problems.push(`[target-counter-agg-rule] ${where}: counter ${s.metric} is not aggregated with rate, irate or increase`);
      }
    }
  }
  return problems;
}
