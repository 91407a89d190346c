// wrapModels recognises models by brand, not by class identity: a Gemini built with a second
// copy of @google/adk (as a user's module with its own node_modules brings) is wrapped, and
// a RateLimitedLlm is kept. The second copy is the installed package's ESM build copied into
// a temporary node_modules, its dependencies linked to this checkout's.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Gemini, LlmAgent } from '@google/adk';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isGemini } from '../../instrumentation/tree/adk-brands.ts';
import { parseServiceOptions } from '../../agent/config.ts';
import { wrapModels } from '../../agent/serve/wrap-models.ts';

const REPO_MODULES = join(import.meta.dirname, '../../node_modules');
const PROVIDER = { providerUrl: 'http://127.0.0.1:9', apiKey: 'test-key', httpTimeoutMs: 1000 };

let dir: string;
let OtherGemini: typeof Gemini;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'qs-adk-copy-'));
  const modules = join(dir, 'node_modules');
  const copy = join(modules, '@google/adk');
  mkdirSync(join(modules, '@google'), { recursive: true });
  cpSync(join(REPO_MODULES, '@google/adk/package.json'), join(copy, 'package.json'));
  cpSync(join(REPO_MODULES, '@google/adk/dist/esm'), join(copy, 'dist/esm'), { recursive: true });
  for (const entry of readdirSync(REPO_MODULES)) {
    if (entry.startsWith('.')) continue;
    if (entry === '@google') {
      for (const scoped of readdirSync(join(REPO_MODULES, '@google'))) {
        if (scoped !== 'adk') symlinkSync(join(REPO_MODULES, '@google', scoped), join(modules, '@google', scoped));
      }
    } else symlinkSync(join(REPO_MODULES, entry), join(modules, entry));
  }
  const other = (await import(pathToFileURL(join(copy, 'dist/esm/index.js')).href)) as { Gemini: typeof Gemini };
  OtherGemini = other.Gemini;
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('models from another copy of @google/adk', () => {
  it('the second copy really is another class', () => {
    expect(OtherGemini).not.toBe(Gemini);
    const model = new OtherGemini({ model: 'gemini-2.5-flash', apiKey: 'k' });
    expect(model instanceof Gemini).toBe(false);
    expect(isGemini(model)).toBe(true);
    expect(isGemini({ model: 'gemini-2.5-flash' })).toBe(false);
    expect(isGemini(null)).toBe(false);
  });

  it('wraps a Gemini of the other copy and keeps the RateLimitedLlm it made', async () => {
    const limiterOptions = parseServiceOptions({});
    const agent = new LlmAgent({ name: 'other_copy', model: new OtherGemini({ model: 'gemini-2.5-pro', apiKey: 'k' }) });
    const wrapped = await wrapModels([agent], limiterOptions, PROVIDER, new Registry());
    try {
      expect(wrapped.decisions).toEqual([{ agent: 'other_copy', action: 'wrapped', model: 'gemini-2.5-pro', limiter: limiterOptions.limiterName }]);
      const again = await wrapModels([agent], limiterOptions, PROVIDER, new Registry());
      expect(again.decisions).toEqual([{ agent: 'other_copy', action: 'kept', reason: 'already rate-limited' }]);
      await again.close();
    } finally {
      await wrapped.close();
    }
  });
});
