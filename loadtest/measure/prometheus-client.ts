// The few Prometheus HTTP API queries the measurements and the report need.

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

async function api(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { status: string; data: unknown; error?: string };
  if (body.status !== 'success') throw new Error(`prometheus: ${body.error ?? res.status}`);
  return body.data;
}

/** An instant query; `time` in epoch ms (now when absent). */
export async function query(prometheusUrl: string, expr: string, time?: number): Promise<Sample[]> {
  const params = new URLSearchParams({ query: expr });
  if (time !== undefined) params.set('time', String(time / 1000));
  const data = (await api(`${prometheusUrl}/api/v1/query?${params}`)) as { result: { metric: Record<string, string>; value: [number, string] }[] };
  return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

/** The first sample's value, or undefined when the query returned nothing or NaN. */
export async function queryScalar(prometheusUrl: string, expr: string, time?: number): Promise<number | undefined> {
  const [first] = await query(prometheusUrl, expr, time);
  return first && Number.isFinite(first.value) ? first.value : undefined;
}

export interface Series {
  metric: Record<string, string>;
  points: [number, number][];
}

/** A range query; start and end in epoch ms; points are [epoch ms, value]. */
export async function queryRange(prometheusUrl: string, expr: string, start: number, end: number, stepSeconds: number): Promise<Series[]> {
  const params = new URLSearchParams({ query: expr, start: String(start / 1000), end: String(end / 1000), step: String(stepSeconds) });
  const data = (await api(`${prometheusUrl}/api/v1/query_range?${params}`)) as { result: { metric: Record<string, string>; values: [number, string][] }[] };
  return data.result.map((r) => ({ metric: r.metric, points: r.values.map(([t, v]) => [Math.round(t * 1000), Number(v)] as [number, number]) }));
}

export interface Alert {
  name: string;
  state: string;
  activeAt?: string;
}

/** Alerts pending or firing right now. */
export async function alerts(prometheusUrl: string): Promise<Alert[]> {
  const data = (await api(`${prometheusUrl}/api/v1/alerts`)) as { alerts: { labels: Record<string, string>; state: string; activeAt?: string }[] };
  return data.alerts.map((a) => ({ name: a.labels.alertname ?? '?', state: a.state, activeAt: a.activeAt }));
}

/** Alerts that fired at any time in [start, end] (from the ALERTS series), by name. */
export async function alertsFiredBetween(prometheusUrl: string, start: number, end: number): Promise<string[]> {
  const seconds = Math.max(1, Math.ceil((end - start) / 1000));
  const samples = await query(prometheusUrl, `max by (alertname) (max_over_time(ALERTS{alertstate="firing"}[${seconds}s]))`, end);
  return samples.map((s) => s.metric.alertname).sort();
}


/** How many alerting rules Prometheus has loaded (fails when it cannot be reached). */
export async function alertRuleCount(prometheusUrl: string): Promise<number> {
  const data = (await api(`${prometheusUrl}/api/v1/rules?type=alert`)) as { groups: { rules: unknown[] }[] };
  return data.groups.reduce((n, g) => n + g.rules.length, 0);
}
