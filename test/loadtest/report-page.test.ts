// The report's pure parts: time flags, the page's self-containment (everything inlined, data
// that cannot end a <script>), and the problem banners.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseReportArgs, parseTime } from '../../cli/report.ts';
import { type ReportData, renderReport } from '../../loadtest/report/page.ts';

const NOW = Date.parse('2026-12-01T10:00:00Z');

function data(extra: Partial<ReportData> = {}): ReportData {
  return {
    title: 'quotascope run r1',
    runId: 'r1',
    generatedAt: NOW,
    range: { from: NOW - 600_000, to: NOW },
    prometheusUrl: 'http://127.0.0.1:9090',
    charts: [],
    alerts: [],
    parameters: {},
    ...extra,
  };
}

describe('report time flags', () => {
  it('reads ISO 8601, epoch seconds, now and now-<n><unit>', () => {
    expect(parseTime('2026-12-01T09:00:00Z', NOW)).toBe(NOW - 3600_000);
    expect(parseTime('1764579600', NOW)).toBe(1764579600_000);
    expect(parseTime('now', NOW)).toBe(NOW);
    expect(parseTime('now-30m', NOW)).toBe(NOW - 1800_000);
    expect(parseTime('now-2h', NOW)).toBe(NOW - 7200_000);
    for (const bad of ['yesterday', '', 'now+5m', '12:00', 'now-5x']) expect(parseTime(bad, NOW), bad).toBeUndefined();
  });

  it('property: ISO and epoch-second forms of a time read back to it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_000_000_000, max: 4_000_000_000 }), (seconds) => {
        expect(parseTime(new Date(seconds * 1000).toISOString(), NOW)).toBe(seconds * 1000);
        expect(parseTime(String(seconds), NOW)).toBe(seconds * 1000);
      }),
    );
  });

  it('flags are checked with the flag named', () => {
    expect(() => parseReportArgs(['--from', 'soon'])).toThrow(/^--from: /);
    expect(() => parseReportArgs(['--scrape-interval=-1'])).toThrow(/^--scrape-interval: /);
    expect(() => parseReportArgs(['--run-id', '../x'])).toThrow(/^--run-id: /);
    expect(() => parseReportArgs(['--bogus'])).toThrow(/bogus/);
    const o = parseReportArgs(['--from', 'now-1h', '--screenshots']);
    expect(o).toMatchObject({ prometheus: 'http://127.0.0.1:9090', from: 'now-1h', screenshots: true, 'report-dir': 'reports' });
  });
});

describe('report page', () => {
  it('is self-contained: uPlot and the page script inlined, no external reference, a CSP that allows none', () => {
    const html = renderReport(data());
    expect(html).toContain('uPlot');
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(html).toContain(`default-src 'none'`);
  });

  it('data cannot close its <script> element', () => {
    const html = renderReport(data({ parameters: { note: '</script><script>alert(1)</script>' } }));
    const json = html.slice(html.indexOf('id="report-data">'), html.indexOf('</script>', html.indexOf('id="report-data">')));
    expect(json).not.toContain('<');
    expect(JSON.parse(json.slice('id="report-data">'.length)).parameters.note).toBe('</script><script>alert(1)</script>');
    expect(html).toContain('&#60;/script&#62;'); // the parameters table shows it as text
  });

  it('says when Prometheus is down or the range is empty, instead of empty charts', () => {
    const down = renderReport(data({ problem: { kind: 'down', message: 'http://127.0.0.1:9 did not answer (ECONNREFUSED).' } }));
    expect(down).toContain('Prometheus is not reachable.');
    expect(down).toContain('ECONNREFUSED');
    expect(down).not.toContain('id="charts"');
    const empty = renderReport(data({ problem: { kind: 'empty', message: 'none of the 36 panels has a sample' } }));
    expect(empty).toContain('No data in this range.');
  });
});
