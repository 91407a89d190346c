// A run's picture: stacked line charts (e.g. acquire-time p95 and calls in flight over the
// run) as a plain string-built SVG, written next to summary.json.

export interface Panel {
  title: string;
  unit: string;
  /** Points as [epoch ms, value]. */
  points: [number, number][];
}

const W = 720;
const PANEL_H = 180;
const PAD = { left: 60, right: 20, top: 28, bottom: 28 };

const esc = (s: string): string => s.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);

function panelSvg(p: Panel, y0: number, t0: number, t1: number): string {
  const values = p.points.map(([, v]) => v).filter(Number.isFinite);
  const max = Math.max(1e-9, ...values) * 1.1;
  const plotW = W - PAD.left - PAD.right;
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const x = (t: number) => PAD.left + ((t - t0) / Math.max(1, t1 - t0)) * plotW;
  const y = (v: number) => y0 + PAD.top + plotH - (v / max) * plotH;
  const path = p.points
    .filter(([, v]) => Number.isFinite(v))
    .map(([t, v], i) => `${i ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`)
    .join(' ');
  const ticks = [0, 0.5, 1].map((f) => {
    const v = (max / 1.1) * f;
    return `<text x="${PAD.left - 6}" y="${y(v) + 4}" text-anchor="end" font-size="10">${v.toFixed(v < 10 ? 2 : 0)}</text><line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`;
  });
  const seconds = Math.round((t1 - t0) / 1000);
  return [
    `<text x="${PAD.left}" y="${y0 + 18}" font-size="13" font-weight="bold">${esc(p.title)} (${esc(p.unit)})</text>`,
    ...ticks,
    `<line x1="${PAD.left}" x2="${PAD.left}" y1="${y0 + PAD.top}" y2="${y0 + PAD.top + plotH}" stroke="#888"/>`,
    `<text x="${PAD.left}" y="${y0 + PANEL_H - 8}" font-size="10">0 s</text>`,
    `<text x="${W - PAD.right}" y="${y0 + PANEL_H - 8}" font-size="10" text-anchor="end">${seconds} s</text>`,
    values.length ? `<path d="${path}" fill="none" stroke="#1f77b4" stroke-width="2"/>` : `<text x="${W / 2}" y="${y0 + PANEL_H / 2}" text-anchor="middle" font-size="12" fill="#888">no data</text>`,
  ].join('\n');
}

/** One SVG with a panel per series over the shared time range [t0, t1] (epoch ms). */
export function renderSvg(title: string, panels: Panel[], t0: number, t1: number): string {
  const h = 30 + panels.length * PANEL_H;
  const body = panels.map((p, i) => panelSvg(p, 30 + i * PANEL_H, t0, t1)).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="${W / 2}" y="20" text-anchor="middle" font-size="15">${esc(title)}</text>
${body}
</svg>
`;
}
