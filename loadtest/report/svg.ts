// A run's picture: stacked time-series panels (the dashboards' own panel specs, rendered from
// the run's Prometheus data) as a plain string-built SVG, written next to summary.json.
// Each panel has a y axis in its unit, an x axis in seconds since the run started, a legend,
// threshold lines (when on scale), reference lines (e.g. the planned calls in flight) and an
// optional shaded band (the window plan vs measured was measured in).

export interface PlotSeries {
  label: string;
  /** Points as [epoch ms, value]. */
  points: [number, number][];
}

export interface PlotLine {
  label: string;
  value: number;
  color: string;
}

export interface Panel {
  title: string;
  /** Grafana unit id (s, short, reqps, percentunit) or any short unit text. */
  unit: string;
  series: PlotSeries[];
  /** Horizontal dashed lines: thresholds, planned values. */
  lines?: PlotLine[];
}

export interface PlotOptions {
  title: string;
  subtitle?: string;
  /** Shaded time range with a label, epoch ms. */
  band?: { start: number; end: number; label: string };
}

const W = 900;
const PANEL_H = 220;
const PAD = { left: 70, right: 230, top: 34, bottom: 40 };
/** Legend text wraps after this many characters. */
const LEGEND_CHARS = 30;
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

const esc = (s: string): string => s.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** Axis label for a Grafana unit id. */
export function unitLabel(unit: string): string {
  return ({ s: 'seconds', short: 'count', reqps: 'requests/s', percentunit: '%' } as Record<string, string>)[unit] ?? unit;
}

/** A tick value in the panel's unit: 0.25 s → "250 ms", 0.5 (percentunit) → "50%". */
export function formatTick(v: number, unit: string): string {
  const trim = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Number(x.toPrecision(3)).toString());
  if (unit === 's') return v !== 0 && Math.abs(v) < 1 ? `${trim(v * 1000)} ms` : `${trim(v)} s`;
  if (unit === 'percentunit') return `${trim(v * 100)}%`;
  return trim(v);
}

/** 1, 2 or 5 × a power of ten, so that about `count` steps cover `span`. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0)) return 1;
  const raw = span / count;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const m = raw / pow;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * pow;
}

/** Splits text into lines of at most `max` characters at spaces (a longer word stays whole). */
export function wrap(text: string, max: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > max) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

function panelSvg(p: Panel, y0: number, t0: number, t1: number, band: PlotOptions['band']): string {
  const plotW = W - PAD.left - PAD.right;
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const values = p.series.flatMap((s) => s.points.map(([, v]) => v)).filter(Number.isFinite);
  const dataMax = Math.max(0, ...values);
  // Lines far above the data would flatten it: draw them only when within 1.5 x the data.
  const lines = (p.lines ?? []).filter((l) => Number.isFinite(l.value));
  const onScale = lines.filter((l) => dataMax === 0 || l.value <= dataMax * 1.5);
  const top = Math.max(dataMax, ...onScale.map((l) => l.value));
  const step = niceStep(top || 1, 4);
  const yMax = Math.max(step, Math.ceil((top * 1.05) / step) * step);
  const x = (t: number) => PAD.left + ((t - t0) / Math.max(1, t1 - t0)) * plotW;
  const y = (v: number) => y0 + PAD.top + plotH - (Math.min(v, yMax) / yMax) * plotH;
  const out: string[] = [];
  out.push(`<text x="${PAD.left}" y="${y0 + 20}" font-size="14" font-weight="bold">${esc(p.title)}</text>`);
  if (band) {
    const bx = x(Math.max(t0, band.start));
    const bw = Math.max(0, x(Math.min(t1, band.end)) - bx);
    out.push(`<rect x="${bx.toFixed(1)}" y="${y0 + PAD.top}" width="${bw.toFixed(1)}" height="${plotH}" fill="#f2f2f2"/>`);
  }
  // y axis: grid, ticks in the unit, axis title.
  for (let v = 0; v <= yMax + step / 2; v += step) {
    out.push(`<line x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${PAD.left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" font-size="11">${esc(formatTick(v, p.unit))}</text>`);
  }
  const midY = y0 + PAD.top + plotH / 2;
  out.push(`<text x="14" y="${midY}" font-size="11" text-anchor="middle" transform="rotate(-90 14 ${midY})">${esc(unitLabel(p.unit))}</text>`);
  // x axis: seconds since the start.
  const seconds = (t1 - t0) / 1000;
  const xStep = niceStep(seconds, 8);
  for (let s = 0; s <= seconds + 1e-9; s += xStep) {
    const tx = x(t0 + s * 1000);
    out.push(`<line x1="${tx.toFixed(1)}" x2="${tx.toFixed(1)}" y1="${y0 + PAD.top + plotH}" y2="${y0 + PAD.top + plotH + 4}" stroke="#888"/>`);
    out.push(`<text x="${tx.toFixed(1)}" y="${y0 + PAD.top + plotH + 16}" text-anchor="middle" font-size="11">${Number(s.toPrecision(4))}</text>`);
  }
  out.push(`<text x="${PAD.left + plotW / 2}" y="${y0 + PANEL_H - 6}" text-anchor="middle" font-size="11">time since the run started (s)</text>`);
  out.push(`<line x1="${PAD.left}" x2="${PAD.left}" y1="${y0 + PAD.top}" y2="${y0 + PAD.top + plotH}" stroke="#888"/>`);
  out.push(`<line x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${y0 + PAD.top + plotH}" y2="${y0 + PAD.top + plotH}" stroke="#888"/>`);
  // Dashed horizontal lines, then the series.
  for (const l of onScale) {
    out.push(`<line x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${y(l.value).toFixed(1)}" y2="${y(l.value).toFixed(1)}" stroke="${l.color}" stroke-width="1.5" stroke-dasharray="6 4"/>`);
  }
  const legend: { label: string; color: string; dashed: boolean }[] = [];
  p.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const d = s.points
      .filter(([, v]) => Number.isFinite(v))
      .map(([t, v], j) => `${j ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`)
      .join(' ');
    if (d) out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
    legend.push({ label: d ? s.label : `${s.label} (no data)`, color, dashed: false });
  });
  if (!values.length) out.push(`<text x="${PAD.left + plotW / 2}" y="${midY}" text-anchor="middle" font-size="12" fill="#888">no data in this run</text>`);
  for (const l of lines) {
    const off = onScale.includes(l) ? '' : ' (off scale)';
    legend.push({ label: `${l.label} ${formatTick(l.value, p.unit)}${off}`, color: l.color, dashed: true });
  }
  if (band) legend.push({ label: band.label, color: '#d0d0d0', dashed: false });
  const lx = PAD.left + plotW + 14;
  let ly = y0 + PAD.top + 8;
  for (const item of legend) {
    const width = item.label === band?.label ? 8 : 2;
    out.push(`<line x1="${lx}" x2="${lx + 22}" y1="${ly}" y2="${ly}" stroke="${item.color}" stroke-width="${width}"${item.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    for (const [i, text] of wrap(item.label, LEGEND_CHARS).entries()) {
      out.push(`<text x="${lx + 28}" y="${ly + 4 + i * 13}" font-size="11">${esc(text)}</text>`);
      if (i > 0) ly += 13;
    }
    ly += 18;
  }
  return out.join('\n');
}

/** One SVG with a panel per entry over the shared time range [t0, t1] (epoch ms). */
export function renderSvg(options: PlotOptions, panels: Panel[], t0: number, t1: number): string {
  const head = options.subtitle ? 52 : 34;
  const h = head + panels.length * PANEL_H;
  const body = panels.map((p, i) => panelSvg(p, head + i * PANEL_H, t0, t1, options.band)).join('\n');
  const subtitle = options.subtitle ? `\n<text x="${W / 2}" y="42" text-anchor="middle" font-size="12" fill="#555">${esc(options.subtitle)}</text>` : '';
  // The <title> is the picture's text alternative (read by screen readers and shown as a tooltip).
  const alt = `${options.title}: ${panels.map((p) => p.title).join(', ')}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="sans-serif">
<title>${esc(alt)}</title>
<rect width="100%" height="100%" fill="white"/>
<text x="${W / 2}" y="22" text-anchor="middle" font-size="16">${esc(options.title)}</text>${subtitle}
${body}
</svg>
`;
}
