// The run report's browser side: draws every chart of the embedded report data with uPlot
// (inlined in the page beside this script), with the panels' units, legends and threshold
// lines. Runs from a file: no request leaves the page.
/* global uPlot */
(() => {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const COLORS = ['#7EB26D', '#EAB839', '#6ED0E0', '#EF843C', '#E24D42', '#1F78C1', '#BA43A9', '#705DA0', '#508642', '#CCA300'];
  const LINE_COLORS = { orange: '#FF9830', red: '#F2495C', grey: '#8E8E8E' };
  const CALC_NAMES = { mean: 'Mean', max: 'Max', lastNotNull: 'Last *' };

  const trim = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : String(Number(x.toPrecision(3))));
  const si = (v) => {
    const a = Math.abs(v);
    if (a >= 1e9) return `${trim(v / 1e9)} G`;
    if (a >= 1e6) return `${trim(v / 1e6)} M`;
    if (a >= 1e3) return `${trim(v / 1e3)} K`;
    return trim(v);
  };
  /** A value in a Grafana unit: s, ms, percentunit, reqps, ops, short. */
  function format(v, unit) {
    if (v === null || v === undefined || !Number.isFinite(v)) return '-';
    switch (unit) {
      case 's':
        if (v !== 0 && Math.abs(v) < 1) return `${trim(v * 1000)} ms`;
        if (Math.abs(v) >= 120) return `${trim(v / 60)} min`;
        return `${trim(v)} s`;
      case 'ms':
        return Math.abs(v) >= 1000 ? `${trim(v / 1000)} s` : `${trim(v)} ms`;
      case 'percentunit':
        return `${trim(v * 100)}%`;
      case 'reqps':
        return `${si(v)} req/s`;
      case 'ops':
        return `${si(v)} ops/s`;
      default:
        return si(v);
    }
  }

  /** The series on one shared time axis (seconds): uPlot's aligned columns. */
  function align(series) {
    const times = [...new Set(series.flatMap((s) => s.points.map((p) => Math.round(p[0]))))].sort((a, b) => a - b);
    const index = new Map(times.map((t, i) => [t, i]));
    const columns = series.map((s) => {
      const col = new Array(times.length).fill(null);
      for (const [t, v] of s.points) if (Number.isFinite(v)) col[index.get(Math.round(t))] = v;
      return col;
    });
    return [times.map((t) => t / 1000), ...columns];
  }

  function calc(values, name) {
    const finite = values.filter((v) => v !== null && Number.isFinite(v));
    if (!finite.length) return undefined;
    if (name === 'mean') return finite.reduce((a, b) => a + b, 0) / finite.length;
    if (name === 'max') return Math.max(...finite);
    return finite[finite.length - 1];
  }

  function legendTable(chart, columns, colors) {
    const table = document.createElement('table');
    table.className = 'legend';
    const head = table.createTHead().insertRow();
    for (const text of ['', ...data.legendCalcs.map((c) => CALC_NAMES[c] ?? c)]) {
      const th = document.createElement('th');
      th.textContent = text;
      head.appendChild(th);
    }
    const body = table.createTBody();
    chart.series.forEach((s, i) => {
      const row = body.insertRow();
      const name = row.insertCell();
      const swatch = document.createElement('span');
      swatch.className = s.reference ? 'swatch dashed' : 'swatch';
      if (s.reference) swatch.style.borderColor = colors[i];
      else swatch.style.background = colors[i];
      name.append(swatch, s.label);
      for (const c of data.legendCalcs) row.insertCell().textContent = format(calc(columns[i + 1], c), s.unit ?? chart.unit);
    });
    for (const line of chart.lines) {
      const row = body.insertRow();
      const name = row.insertCell();
      const swatch = document.createElement('span');
      swatch.className = 'swatch dashed';
      swatch.style.borderColor = LINE_COLORS[line.color];
      name.append(swatch, `${line.label} ${format(line.value, chart.unit)}`);
      for (const _ of data.legendCalcs) row.insertCell();
    }
    return table;
  }

  /** Colours of the incident markers (first 429, first shed, quota changes); the page's legend uses the same. */
  const MARKER_COLORS = { 'first-429': '#C4162A', 'first-shed': '#8F3BB8', 'quota-change': '#1F60C4' };

  /** The incident markers: a solid vertical line each, its label at the top. */
  function drawMarkers(u) {
    const markers = data.markers || [];
    if (!markers.length) return;
    const { ctx } = u;
    const { left, top, width, height } = u.bbox;
    ctx.save();
    ctx.setLineDash([]);
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    ctx.textAlign = 'left';
    /** The right end of the last label on each text row: a label takes the first row it fits in. */
    const rowEnds = [];
    const gap = 6 * devicePixelRatio;
    for (const m of markers) {
      const x = u.valToPos(m.at / 1000, 'x', true);
      if (x < left || x > left + width) continue;
      ctx.strokeStyle = MARKER_COLORS[m.kind];
      ctx.fillStyle = MARKER_COLORS[m.kind];
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      const textWidth = ctx.measureText(m.label).width;
      const tx = Math.max(left, x + textWidth + gap > left + width ? x - textWidth - 3 : x + 3);
      let row = rowEnds.findIndex((end) => end + gap <= tx);
      if (row < 0) row = rowEnds.length;
      rowEnds[row] = tx + textWidth;
      ctx.fillText(m.label, tx, top + 2 + row * 13 * devicePixelRatio);
    }
    ctx.restore();
  }

  /** Dashed reference lines and the shaded plan-vs-measured window. */
  function overlays(chart) {
    return (u) => {
      const { ctx } = u;
      const { left, top, width, height } = u.bbox;
      ctx.save();
      if (data.window) {
        const x0 = u.valToPos(data.window.start / 1000, 'x', true);
        const x1 = u.valToPos(data.window.end / 1000, 'x', true);
        ctx.fillStyle = 'rgba(120,120,120,0.10)';
        ctx.fillRect(Math.max(left, x0), top, Math.min(left + width, x1) - Math.max(left, x0), height);
      }
      ctx.setLineDash([6, 4]);
      ctx.lineWidth = 1.5 * devicePixelRatio;
      for (const line of chart.lines) {
        const y = u.valToPos(line.value, 'y', true);
        if (y < top || y > top + height) continue;
        ctx.strokeStyle = LINE_COLORS[line.color];
        ctx.beginPath();
        ctx.moveTo(left, y);
        ctx.lineTo(left + width, y);
        ctx.stroke();
      }
      ctx.restore();
    };
  }

  /** The y range of one axis: the data, plus the reference lines within 1.5 x the data (farther ones would flatten it). */
  function yRange(chart, columns, onAxis) {
    const data = [];
    const refs = chart.lines.map((l) => l.value);
    chart.series.forEach((s, i) => {
      if (!onAxis(s)) return;
      const values = columns[i + 1].filter((v) => v !== null);
      if (s.reference) refs.push(...values);
      else data.push(...values);
    });
    const dataMax = data.length ? Math.max(...data) : 0;
    const dataMin = data.length ? Math.min(...data) : 0;
    const onScale = refs.filter((v) => dataMax === 0 || v <= dataMax * 1.5);
    const hi = chart.max ?? Math.max(dataMax, ...onScale, 0) * 1.05;
    const lo = chart.min ?? Math.min(dataMin, 0);
    return [lo, hi > lo ? hi : lo + 1];
  }

  function timeseries(chart, target, width) {
    const columns = align(chart.series);
    const colors = chart.series.map((s, i) => (s.reference ? LINE_COLORS[s.reference] : COLORS[i % COLORS.length]));
    // A series in another unit than the panel's goes on a right-hand axis in that unit.
    const rightUnit = chart.series.find((s) => s.unit && s.unit !== chart.unit)?.unit;
    const isRight = (s) => rightUnit !== undefined && s.unit === rightUnit;
    const left = yRange(chart, columns, (s) => !isRight(s));
    const scales = { x: { time: true, range: [data.range.from / 1000, data.range.to / 1000] }, y: { range: () => left } };
    const axes = [{}, { size: 70, values: (_u, splits) => splits.map((v) => format(v, chart.unit)) }];
    if (rightUnit) {
      const right = yRange({ ...chart, lines: [], min: 0, max: undefined }, columns, isRight);
      scales.y2 = { range: () => right };
      axes.push({ scale: 'y2', side: 1, size: 70, grid: { show: false }, values: (_u, splits) => splits.map((v) => format(v, rightUnit)) });
    }
    const opts = {
      width,
      height: 220,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales,
      axes,
      series: [
        {},
        ...chart.series.map((s, i) => ({
          label: s.label,
          scale: isRight(s) ? 'y2' : 'y',
          stroke: colors[i],
          width: 1.5,
          dash: s.reference ? [6, 4] : undefined,
          fill: s.reference ? undefined : `${colors[i]}1A`,
          spanGaps: false,
        })),
      ],
      hooks: { draw: [overlays(chart), drawMarkers] },
    };
    new uPlot(opts, columns, target);
    const points = columns.slice(1).flat().filter((v) => v !== null).length;
    return { points, legend: legendTable(chart, columns, colors) };
  }

  /** Bucket counts per step from the cumulative `le` series, drawn as cells (Grafana's heatmap of a histogram). */
  function heatmap(chart, target, width) {
    const columns = align(chart.series);
    const times = columns[0];
    const cumulative = columns.slice(1);
    const cells = cumulative.map((col, j) => col.map((v, i) => (v === null ? null : Math.max(0, v - (j > 0 ? (cumulative[j - 1][i] ?? 0) : 0)))));
    const top = Math.max(0, ...cells.flat().filter((v) => v !== null));
    const bounds = chart.series.map((s) => s.label);
    const opts = {
      width,
      height: 220,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true, range: [data.range.from / 1000, data.range.to / 1000] }, y: { range: [0, Math.max(1, bounds.length)] } },
      axes: [
        {},
        {
          size: 70,
          splits: () => bounds.map((_, j) => j + 1),
          values: (_u, splits) => splits.map((j) => (bounds[j - 1] === '+Inf' ? '+Inf' : format(Number(bounds[j - 1]), chart.unit))),
        },
      ],
      series: [{}, { label: 'buckets', stroke: 'transparent', points: { show: false } }],
      hooks: {
        draw: [
          (u) => {
            const { ctx } = u;
            ctx.save();
            for (let j = 0; j < cells.length; j++) {
              const y0 = u.valToPos(j, 'y', true);
              const y1 = u.valToPos(j + 1, 'y', true);
              for (let i = 0; i < times.length; i++) {
                const v = cells[j][i];
                if (v === null || v <= 0 || top <= 0) continue;
                const x0 = u.valToPos(times[i], 'x', true);
                const x1 = i + 1 < times.length ? u.valToPos(times[i + 1], 'x', true) : x0 + 2;
                ctx.fillStyle = `rgba(242, 73, 92, ${0.15 + 0.85 * (v / top)})`;
                ctx.fillRect(x0, y1, Math.max(1, x1 - x0), y0 - y1);
              }
            }
            ctx.restore();
          },
          drawMarkers,
        ],
      },
    };
    new uPlot(opts, [times, times.map(() => null)], target);
    const points = cells.flat().filter((v) => v !== null).length;
    const legend = document.createElement('p');
    legend.className = 'note';
    legend.textContent = `${bounds.length} buckets; colour: calls per second in the bucket (darkest ${format(top, 'short')}/s)`;
    return { points, legend };
  }

  for (const chart of data.charts) {
    const section = document.querySelector(`section.chart[data-chart-id="${CSS.escape(chart.id)}"]`);
    if (!section) continue; // not on the page: Prometheus was down or had no data
    const plot = section.querySelector('.plot');
    const width = Math.max(320, plot.clientWidth || 560);
    const hasData = chart.series.some((s) => s.points.length > 0);
    if (!hasData) {
      section.dataset.points = '0';
      plot.classList.add('empty');
      plot.textContent = chart.error ? `query failed: ${chart.error}` : `no data in this range${chart.quietRunEmpty ? ` (${chart.quietRunEmpty})` : ''}`;
      continue;
    }
    const drawn = chart.kind === 'heatmap' ? heatmap(chart, plot, width) : timeseries(chart, plot, width);
    section.dataset.points = String(drawn.points);
    section.appendChild(drawn.legend);
  }
  document.body.dataset.ready = 'true';
})();
