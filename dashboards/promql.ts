// Small PromQL builders so the panels and rules read as what they compute.

/** `metric{selector}`, or the bare metric when the selector is empty. */
export function series(metric: string, selector = ''): string {
  return selector ? `${metric}{${selector}}` : metric;
}

/** `sum by (labels) (rate(metric{selector}[window]))`; `by ()` is left out when no labels. */
export function sumRate(metric: string, selector: string, window: string, by: readonly string[] = []): string {
  return `${sumBy(by)}(rate(${series(metric, selector)}[${window}]))`;
}

/** `sum by (labels) (increase(...))`. */
export function sumIncrease(metric: string, selector: string, window: string, by: readonly string[] = []): string {
  return `${sumBy(by)}(increase(${series(metric, selector)}[${window}]))`;
}

/** `sum by (labels) (metric{selector})`. */
export function sumOf(metric: string, selector: string, by: readonly string[] = []): string {
  return `${sumBy(by)}(${series(metric, selector)})`;
}

/** The φ-quantile of a classic histogram: rate first, then sum keeping `le`. */
export function quantile(
  q: number,
  histogram: string,
  selector: string,
  window: string,
  by: readonly string[] = [],
): string {
  return `histogram_quantile(${q}, ${sumRate(`${histogram}_bucket`, selector, window, ['le', ...by])})`;
}

function sumBy(by: readonly string[]): string {
  return by.length === 0 ? 'sum ' : `sum by (${by.join(', ')}) `;
}

/**
 * `sum by (labels)` of a counter's increase over `window` that counts a series' first sample.
 * increase() needs two samples and reads a series born at 1 (its first event) as 0; a series
 * absent `window` ago started from 0 inside the window, so its whole value is its increase.
 */
export function sumIncreaseFromBirth(metric: string, selector: string, window: string, by: readonly string[] = []): string {
  const s = series(metric, selector);
  return `${sumBy(by)}(\n  (${s} unless ${s} offset ${window})\n  or\n  increase(${s}[${window}])\n)`;
}
