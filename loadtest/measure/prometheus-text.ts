// Reading a Prometheus text exposition (a /metrics body) with parse-prometheus-text-format.
// The parser drops the labels of histogram and summary samples, so their TYPE lines are
// left out: each _bucket, _sum and _count series then reads as a plain sample with its labels.
import parsePrometheusText from 'parse-prometheus-text-format';

export interface TextSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const GROUPED_TYPE = /^#\s*TYPE\s+\S+\s+(histogram|summary)\s*$/;

/** Every sample of the exposition, in order. */
export function parseSamples(text: string): TextSample[] {
  const flat = text
    .split('\n')
    .filter((line) => !GROUPED_TYPE.test(line))
    .join('\n');
  return parsePrometheusText(flat).flatMap((family) =>
    family.metrics.map((m) => ({ name: family.name, labels: m.labels ?? {}, value: Number(m.value) })),
  );
}

/** The samples of metric `name` whose labels include `labels`. */
export function samplesOf(text: string, name: string, labels: Record<string, string> = {}): TextSample[] {
  return parseSamples(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The sum of every sample of `name` (all label values) whose labels include `labels`; 0 when there is none. */
export function sumOfMetric(text: string, name: string, labels: Record<string, string> = {}): number {
  return samplesOf(text, name, labels).reduce((sum, s) => sum + (Number.isFinite(s.value) ? s.value : 0), 0);
}
