// The quota benchmark's picture, a string-built SVG like the run plot: each variant's quota
// use (mean per window, a whisker to the busiest window) against the 429s the provider
// answered; below it, the AIMD run's timeline (429s and permits per window, the quota step).

export interface QuotaPoint {
  readonly label: string;
  /** Mean tokens per window / quota. */
  readonly quotaUse: number;
  readonly quotaUseMax: number;
  readonly provider429s: number;
}

export interface TimelineWindow {
  readonly rateLimited: number;
  readonly permits?: number;
  /** Tokens counted / the quota in force in that window. */
  readonly quotaUse: number;
}

const W = 900;
const PAD = { left: 70, right: 250, top: 50, bottom: 50 };
const COLORS = ['#d62728', '#ff7f0e', '#8c564b', '#7f7f7f', '#2ca02c', '#1f77b4', '#9467bd'];

const esc = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function scatter(points: readonly QuotaPoint[], top: number, height: number): string[] {
  const plotW = W - PAD.left - PAD.right;
  const xMax = Math.max(1.2, ...points.map((p) => p.quotaUseMax * 1.05));
  const yMax = niceMax(Math.max(1, ...points.map((p) => p.provider429s)));
  const x = (v: number) => PAD.left + (v / xMax) * plotW;
  const y = (v: number) => top + height - (v / yMax) * height;
  const out = [
    `<text x="${PAD.left}" y="${top - 12}" font-size="14" font-weight="bold">Quota use per window (mean, whisker to max) against provider 429s</text>`,
    `<rect x="${PAD.left}" y="${top}" width="${plotW}" height="${height}" fill="none" stroke="#999"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    out.push(`<text x="${PAD.left - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${Math.round(v)}</text>`);
    out.push(`<line x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
  }
  for (let v = 0; v <= xMax + 1e-9; v += 0.2) {
    out.push(`<text x="${x(v)}" y="${top + height + 16}" font-size="11" text-anchor="middle">${Math.round(v * 100)} %</text>`);
  }
  out.push(`<line x1="${x(1)}" x2="${x(1)}" y1="${top}" y2="${top + height}" stroke="#d62728" stroke-dasharray="4 3"/>`);
  out.push(`<text x="${x(1) + 4}" y="${top + 12}" font-size="11" fill="#d62728">quota</text>`);
  out.push(`<text x="${PAD.left + plotW / 2}" y="${top + height + 36}" font-size="12" text-anchor="middle">tokens the provider counted per window / quota</text>`);
  out.push(`<text x="18" y="${top + height / 2}" font-size="12" transform="rotate(-90 18 ${top + height / 2})" text-anchor="middle">provider 429s</text>`);
  points.forEach((p, i) => {
    const color = COLORS[i % COLORS.length];
    out.push(`<line x1="${x(p.quotaUse)}" x2="${x(p.quotaUseMax)}" y1="${y(p.provider429s)}" y2="${y(p.provider429s)}" stroke="${color}" stroke-width="2"/>`);
    out.push(`<circle cx="${x(p.quotaUse)}" cy="${y(p.provider429s)}" r="5" fill="${color}"/>`);
    const ly = top + 14 + i * 18;
    out.push(`<circle cx="${W - PAD.right + 16}" cy="${ly - 4}" r="5" fill="${color}"/>`);
    out.push(`<text x="${W - PAD.right + 26}" y="${ly}" font-size="12">${esc(p.label)}</text>`);
  });
  return out;
}

function timeline(windows: readonly TimelineWindow[], stepWindow: number, title: string, top: number, height: number): string[] {
  const plotW = W - PAD.left - PAD.right;
  const n = Math.max(1, windows.length);
  const yMax = niceMax(Math.max(1, ...windows.map((w) => w.rateLimited)));
  const pMax = niceMax(Math.max(1, ...windows.map((w) => w.permits ?? 0)));
  const band = plotW / n;
  const y = (v: number, max: number) => top + height - (v / max) * height;
  const out = [
    `<text x="${PAD.left}" y="${top - 12}" font-size="14" font-weight="bold">${esc(title)}</text>`,
    `<rect x="${PAD.left}" y="${top}" width="${plotW}" height="${height}" fill="none" stroke="#999"/>`,
  ];
  windows.forEach((w, i) => {
    const h = (w.rateLimited / yMax) * height;
    out.push(`<rect x="${PAD.left + i * band + 1}" y="${top + height - h}" width="${Math.max(1, band - 2)}" height="${h}" fill="#d62728" opacity="0.7"/>`);
  });
  const line = (value: (w: TimelineWindow) => number | undefined, max: number) =>
    windows
      .map((w, i) => [PAD.left + (i + 0.5) * band, value(w)] as const)
      .filter((p): p is readonly [number, number] => p[1] !== undefined)
      .map(([px, v]) => `${px.toFixed(1)},${y(v, max).toFixed(1)}`)
      .join(' ');
  out.push(`<polyline points="${line((w) => w.permits, pMax)}" fill="none" stroke="#1f77b4" stroke-width="2"/>`);
  out.push(`<polyline points="${line((w) => w.quotaUse, 1.2)}" fill="none" stroke="#2ca02c" stroke-width="2" stroke-dasharray="5 3"/>`);
  const sx = PAD.left + stepWindow * band;
  out.push(`<line x1="${sx}" x2="${sx}" y1="${top}" y2="${top + height}" stroke="#333" stroke-dasharray="4 3"/>`);
  out.push(`<text x="${sx + 4}" y="${top + 12}" font-size="11">quota raised</text>`);
  for (let i = 0; i < n; i += Math.max(1, Math.round(n / 10))) {
    out.push(`<text x="${PAD.left + (i + 0.5) * band}" y="${top + height + 16}" font-size="11" text-anchor="middle">${i}</text>`);
  }
  out.push(`<text x="${PAD.left + plotW / 2}" y="${top + height + 36}" font-size="12" text-anchor="middle">quota window</text>`);
  out.push(`<text x="${PAD.left - 6}" y="${top + 4}" font-size="11" text-anchor="end">${yMax}</text>`);
  const legend = [
    ['#d62728', '429s per window (bars)'],
    ['#1f77b4', `permits, fleet (0–${pMax})`],
    ['#2ca02c', 'tokens / quota (0–120 %)'],
  ];
  legend.forEach(([color, text], i) => {
    const ly = top + 14 + i * 18;
    out.push(`<rect x="${W - PAD.right + 10}" y="${ly - 9}" width="12" height="10" fill="${color}"/>`);
    out.push(`<text x="${W - PAD.right + 26}" y="${ly}" font-size="12">${esc(text)}</text>`);
  });
  return out;
}

/** The whole SVG; the timeline is drawn when an AIMD run is given. */
export function quotaPlot(
  title: string,
  points: readonly QuotaPoint[],
  aimd?: { readonly windows: readonly TimelineWindow[]; readonly stepWindow: number; readonly title: string },
): string {
  const panel = 260;
  const height = PAD.top + panel + PAD.bottom + (aimd ? panel + PAD.bottom + 40 : 0);
  const body = [...scatter(points, PAD.top + 10, panel - 20)];
  if (aimd) body.push(...timeline(aimd.windows, aimd.stepWindow, aimd.title, PAD.top + panel + PAD.bottom + 30, panel - 40));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif" role="img">`,
    `<title>${esc(title)}</title>`,
    `<rect width="${W}" height="${height}" fill="#fff"/>`,
    `<text x="${PAD.left}" y="24" font-size="16" font-weight="bold">${esc(title)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}
