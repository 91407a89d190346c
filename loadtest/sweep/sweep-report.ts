// The sweep's page, reports/<run-id>/sweep.html: the knee and the plan beside it, the chart
// (sweep-chart.ts), every step's figures and the parameters; one file that loads nothing
// (the same Content-Security-Policy as the run report). Then a screenshot of it in headless
// chromium, sweep.png, where chromium is installed.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { replaceFile } from '../../shared/replace-files.ts';
import { launchChromium } from '../report/browser.ts';
import { esc, parametersSection, table } from '../report/page.ts';
import { findTool } from '../stack/tools.ts';
import type { SweepRecord } from './run-sweep.ts';
import { SWEEP_CHART_STYLE, sweepChart } from './sweep-chart.ts';

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1b1b1b; max-width: 1100px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.headline { font-size: 16px; margin: 12px 0; padding: 10px 14px; border-left: 4px solid #1f6feb; background: #f3f7ff; }
.headline.off { border-color: #d97706; background: #fff7ed; }
table { border-collapse: collapse; font-size: 13px; } td, th { border-bottom: 1px solid #e5e5e5; padding: 4px 10px; text-align: right; }
th { background: #fafafa; } td:first-child, th:first-child { text-align: left; } .kv td { text-align: left; }
.pass { color: #16a34a; } .fail { color: #dc2626; } .note { color: #555; }
${SWEEP_CHART_STYLE}`;

const n = (v: number | undefined, digits = 1) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));

/** The page's HTML for a finished sweep. */
export function sweepPage(r: SweepRecord): string {
  const knee = r.findings.knee;
  const headline = knee
    ? `Knee: ${n(knee.perMinute)} user requests/min offered, ${n(knee.servedPerMinute)} ± ${n(knee.plusMinus)}/min served (${knee.passed} of ${knee.steps} steps at it passed)` +
      `${r.findings.bracket.high === undefined ? '' : `; no rate from ${n(r.findings.bracket.high)}/min up can pass`}.`
    : `No knee: ${r.findings.reason}.`;
  const gap = r.gap ? `<p class="headline${r.gap.differs ? ' off' : ''}" id="plan-line">${esc(r.gap.line)}${r.gap.why ? `<br>${esc(r.gap.why)}` : ''}</p>` : '';
  const saturated = r.findings.saturatedPerMinute === undefined ? 'no step shed more than allowed' : `${n(r.findings.saturatedPerMinute)}/min served at most while shedding`;
  const c = r.criteria;
  const rows = r.steps.map((s) => [
    String(s.index),
    esc(s.phase),
    n(s.perMinute),
    n(s.servedPerMinute),
    n(s.shedPerMinute),
    n(s.partialPercent),
    n(s.lostPercent),
    n(s.servedP95Seconds),
    String(s.provider429s),
    n(s.doorWaitP95Seconds),
    String(s.started),
    s.check.ok ? '<span class="pass">pass</span>' : `<span class="fail">${esc(s.check.why.join('; '))}</span>`,
  ]);
  const stepsTable = table(['step', 'phase', 'offered/min', 'served/min', 'shed/min', 'partial %', 'not served %', 'p95 s', 'provider 429s', 'door wait p95 s', 'requests', 'knee criteria'], rows);
  const chart = sweepChart(
    r.steps.map((s) => ({ perMinute: s.perMinute, servedPerMinute: s.servedPerMinute, servedP95Seconds: s.servedP95Seconds, ok: s.check.ok })),
    { ...(r.plan ? { planPerMinute: r.plan.perMinute } : {}), ...(knee ? { kneePerMinute: knee.perMinute } : {}), sloP95Seconds: c.sloP95Seconds },
  );
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>quotascope sweep ${esc(r.tree)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Measured capacity of ${esc(r.tree)}</h1>
<p class="note">sweep ${esc(r.runId)} · ${r.steps.length} steps of ${r.timing.windowSeconds} s measured after a ${r.timing.warmUpSeconds} s warm-up · ${r.wallSeconds} s in all</p>
<p class="headline" id="knee-line">${esc(headline)} Saturated: ${esc(saturated)}.</p>
${gap}
<p class="note">A knee step serves everything offered (at most ${c.maxLostPercent} % shed, failed or cut off), at most ${c.maxPartialPercent} % partial, p95 of the served requests within ${c.sloP95Seconds} s, and 0 provider 429s.</p>
<section id="chart"><h2>Served and p95 against the offered rate</h2>${chart}</section>
<section id="steps"><h2>Steps</h2>${stepsTable}</section>
${parametersSection(r.parameters)}
</body>
</html>
`;
}

/** Writes sweep.html into `dir` and, where chromium is installed, its screenshot sweep.png. */
export async function writeSweepReport(dir: string, r: SweepRecord): Promise<{ html: string; screenshot?: string }> {
  const html = join(dir, 'sweep.html');
  replaceFile(html, sweepPage(r));
  if (!findTool('chromium')) return { html };
  const screenshot = join(dir, 'sweep.png');
  const browser = await launchChromium({ width: 1000, height: 900 });
  try {
    const page = await browser.context.newPage();
    await page.route('**/*', (route) => (/^(file|data):/.test(route.request().url()) ? route.continue() : route.abort()));
    await page.goto(pathToFileURL(html).href);
    await page.screenshot({ path: screenshot, fullPage: true });
  } finally {
    await browser.close();
  }
  return { html, screenshot };
}
