// Debian's chromium, headless, driven by playwright-core (no browser download): for the
// report's screenshots and for the tests that load the report. Each launch gets a fresh
// profile folder, removed on close, and the switches that keep chromium off the network.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { requireTool } from '../stack/tools.ts';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

export interface HeadlessChromium {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Starts headless chromium with a fresh --user-data-dir; close() stops it and removes the profile. */
export async function launchChromium(viewport = { width: 1280, height: 900 }): Promise<HeadlessChromium> {
  const executablePath = requireTool('chromium');
  const profile = mkdtempSync(join(tmpdir(), 'quotascope-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, { executablePath, headless: true, args: [...CHROMIUM_ARGS], viewport });
    return {
      context,
      async close() {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
