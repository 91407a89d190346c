// The bin's Node check and the TypeScript-module error name the Node version needed.
import { describe, expect, it } from 'vitest';
import { isAtLeast, MINIMUM_NODE, nodeVersionProblem } from '../../cli/node-version.ts';
import manifest from '../../package.json' with { type: 'json' };

describe('Node version', () => {
  it('is the engines field of package.json', () => {
    expect(manifest.engines.node).toBe(`>=${MINIMUM_NODE.replace(/\.0$/, '')}`);
  });

  it('compares versions part by part', () => {
    expect(isAtLeast('22.12.0', '22.12.0')).toBe(true);
    expect(isAtLeast('v24.1.0', '22.12.0')).toBe(true);
    expect(isAtLeast('22.9.0', '22.12.0')).toBe(false);
    expect(isAtLeast('20.20.2', '22.12.0')).toBe(false);
  });

  it('names the Node needed on an older one', () => {
    expect(nodeVersionProblem('20.20.2')).toBe('quotascope needs Node >= 22.12.0; this is Node 20.20.2 (install a current LTS, e.g. with nvm install 24)');
    expect(nodeVersionProblem('22.12.0')).toBeUndefined();
    expect(nodeVersionProblem(process.versions.node)).toBeUndefined();
  });
});
