// PNG screenshots of a written report, for the README and docs: the whole page and each
// chart, taken in headless chromium from the file itself (any other request is refused).
// They are taken into a new folder that replaces the old one only when all are taken.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { replaceFolder } from '../../shared/replace-files.ts';
import { launchChromium } from './browser.ts';

/** Where the screenshots go inside the run folder. */
export const SCREENSHOTS_DIR = 'screenshots';

/** A file name from a chart id (`quotascope-limiter/acquire-quantiles` → `quotascope-limiter--acquire-quantiles`). */
const fileName = (id: string): string => id.replace(/[^a-z0-9-]+/gi, '--');

/** Screenshots of `htmlPath` into `outDir`: report.png (full page), overview.png (first screen), alerts.png (the alerts timeline) and one PNG per chart; returns their paths. */
export async function takeScreenshots(htmlPath: string, outDir: string): Promise<string[]> {
  const names = await replaceFolder(outDir, async (staging) => (await shoot(htmlPath, staging)).map((path) => path.slice(staging.length + 1)));
  return names.map((name) => join(outDir, name));
}

async function shoot(htmlPath: string, outDir: string): Promise<string[]> {
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.route('**/*', (route) => (/^(file|data):/.test(route.request().url()) ? route.continue() : route.abort()));
    await page.goto(pathToFileURL(htmlPath).href);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    const paths = [join(outDir, 'report.png'), join(outDir, 'overview.png'), join(outDir, 'alerts.png')];
    await page.screenshot({ path: paths[0], fullPage: true });
    await page.screenshot({ path: paths[1] }); // the first screen: parameters, summary, plan vs measured
    await page.locator('#alerts').screenshot({ path: paths[2] });
    for (const chart of await page.locator('section.chart').all()) {
      const id = await chart.getAttribute('data-chart-id');
      if (!id) continue;
      const path = join(outDir, `${fileName(id)}.png`);
      await chart.screenshot({ path });
      paths.push(path);
    }
    return paths;
  } finally {
    await browser.close();
  }
}
