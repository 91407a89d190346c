// Label selectors given as PromQL matcher lists (`job="my-agents", namespace=~"prod|eu"`),
// checked with Prometheus' own PromQL grammar so a typo fails at config time, not in Grafana.
import { parser } from '@prometheus-io/lezer-promql';

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface Matcher {
  readonly label: string;
  readonly op: MatchOp;
  readonly value: string;
}

const matchOps: readonly string[] = ['=', '!=', '=~', '!~'];

/** The matchers of a selector body (what goes between `{` and `}`); throws naming what is wrong. */
export function parseMatchers(text: string): Matcher[] {
  if (text.trim() === '') return [];
  const source = `m{${text}}`;
  const tree = parser.parse(source);
  let error: number | undefined;
  const raw: { label: string; op: string; value: string }[] = [];
  tree.iterate({
    enter: (node) => {
      if (node.type.isError && error === undefined) error = node.from;
      if (node.name !== 'UnquotedLabelMatcher' && node.name !== 'QuotedLabelMatcher') return;
      const label = node.node.getChild('LabelName') ?? node.node.getChild('QuotedLabelName');
      const op = node.node.getChild('MatchOp');
      const literal = node.node.getChild('StringLiteral');
      if (!label || !op || !literal) return;
      raw.push({ label: source.slice(label.from, label.to), op: source.slice(op.from, op.to), value: source.slice(literal.from, literal.to) });
    },
  });
  const top = tree.topNode.firstChild;
  if (error !== undefined || top?.name !== 'VectorSelector' || top.to !== source.length) {
    const at = error === undefined ? '' : ` near "${source.slice(Math.max(2, error - 8), error + 8)}"`;
    throw new Error(`not a list of label matchers such as job="my-agents", namespace=~"prod|eu"${at}`);
  }
  const matchers: Matcher[] = raw.map((m) => ({ label: unquote(m.label), op: m.op as MatchOp, value: unquote(m.value) }));
  for (const m of matchers) {
    if (!matchOps.includes(m.op)) throw new Error(`unknown match operator ${m.op}`);
    if (m.op === '=~' || m.op === '!~') {
      try {
        new RegExp(`^(?:${m.value})$`);
      } catch {
        throw new Error(`${m.label}${m.op}"${m.value}" is not a valid regular expression`);
      }
    }
  }
  return matchers;
}

function unquote(literal: string): string {
  if (!literal.startsWith('"')) {
    if (/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(literal)) return literal; // a label name
    throw new Error(`use double quotes for label values: ${literal}`);
  }
  try {
    // PromQL's \UXXXXXXXX (JSON has only \uXXXX).
    const json = literal.replace(/(?<!\\)((?:\\\\)*)\\U([0-9a-fA-F]{8})/g, (_all, slashes: string, hex: string) => {
      const code = Number.parseInt(hex, 16);
      if (code > 0x10ffff) throw new Error('out of range');
      return slashes + JSON.stringify(String.fromCodePoint(code)).slice(1, -1);
    });
    return JSON.parse(json) as string;
  } catch {
    throw new Error(`unsupported escape in ${literal}: use JSON-style escapes`);
  }
}

/** Whether the empty value (a missing label) satisfies the matcher. */
export function matchesValue(m: Matcher, value: string): boolean {
  switch (m.op) {
    case '=':
      return value === m.value;
    case '!=':
      return value !== m.value;
    case '=~':
      return new RegExp(`^(?:${m.value})$`).test(value);
    case '!~':
      return !new RegExp(`^(?:${m.value})$`).test(value);
  }
}

/** Prometheus refuses a selector whose every matcher matches the empty string. */
export function selectsSomething(matchers: readonly Matcher[]): boolean {
  return matchers.some((m) => !matchesValue(m, ''));
}

/**
 * Matchers in canonical PromQL: `label="value"`, the value with JSON's escapes, and \uXXXX /
 * \UXXXXXXXX for every other control, format or separator character (all PromQL escapes;
 * no YAML reader sees a line break in them).
 */
export function formatMatchers(matchers: readonly Matcher[]): string {
  return matchers.map((m) => `${m.label}${m.op}${quotedValue(m.value)}`).join(', ');
}

function quotedValue(value: string): string {
  return JSON.stringify(value).replace(/[\p{C}\p{Z}]/gu, (char) => {
    if (char === ' ') return char;
    const code = char.codePointAt(0) as number;
    return code > 0xffff ? `\\U${code.toString(16).padStart(8, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Joins selector bodies, leaving out the empty ones (and a trailing comma PromQL allows in one). */
export function joinSelectors(...parts: readonly string[]): string {
  return parts
    .map((p) => p.trim().replace(/,$/, '').trim())
    .filter((p) => p !== '')
    .join(', ');
}

const literalAlternatives = /^[A-Za-z0-9_.:-]+(\|[A-Za-z0-9_.:-]+)*$/;

/**
 * A label set that every matcher accepts, for synthetic test series: equality values, a
 * literal alternative of a regex, or `fallback` (labels named there are always set); any other
 * label whose only fit is empty is left out.
 * Throws when no candidate fits (a regex too clever to guess a value for).
 */
export function labelsSatisfying(matchers: readonly Matcher[], fallback: Readonly<Record<string, string>>): Record<string, string> {
  const names = [...new Set([...matchers.map((m) => m.label), ...Object.keys(fallback)])];
  const labels: Record<string, string> = {};
  for (const name of names) {
    const own = matchers.filter((m) => m.label === name);
    const candidates = [
      ...own.filter((m) => m.op === '=').map((m) => m.value),
      ...own.filter((m) => m.op === '=~' && literalAlternatives.test(m.value)).flatMap((m) => m.value.split('|')),
      ...(fallback[name] === undefined ? [] : [fallback[name]]),
      'test',
      // A label with a fallback must be there; any other may be left out.
      ...(fallback[name] === undefined ? [''] : []),
    ];
    const value = candidates.find((c) => own.every((m) => matchesValue(m, c)));
    if (value === undefined) {
      throw new Error(`cannot guess a value of label ${name} that ${own.map((m) => `${m.op}"${m.value}"`).join(' and ')} accept`);
    }
    if (value !== '') labels[name] = value;
  }
  return labels;
}

/** `labels` changed so that some matcher rejects them; null when no equality matcher allows it. */
export function labelsRejected(matchers: readonly Matcher[], labels: Readonly<Record<string, string>>): Record<string, string> | null {
  const m = matchers.find((x) => x.op === '=' && x.value !== '');
  if (!m) return null;
  return { ...labels, [m.label]: `not-${m.value}` };
}
