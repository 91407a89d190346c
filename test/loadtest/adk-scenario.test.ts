// The scenario's protocol fields and the --protocol/--app/--base-path flags: validated
// before k6 starts, each error naming the field or flag.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ScenarioFile } from '../../loadtest/scenario/types.ts';
import { withProtocol } from '../../loadtest/scenario/protocol.ts';
import { parseScenario } from '../../loadtest/scenario/schema.ts';

const base = { name: 'x', arrivals: [{ kind: 'burst', at: 0, users: 1 }] };

describe('scenario protocol fields', () => {
  it('accepts an ADK target with a base path, a fixed user, streaming, a message template and the authors', () => {
    const s = parseScenario({
      ...base,
      protocol: 'adk',
      adk: { app: 'review_app', basePath: '/api', userId: 'load@test', streaming: true, message: 'Q: {document}', authors: ['a', 'b_2'] },
    });
    expect(s.adk?.app).toBe('review_app');
  });

  it('names the bad field', () => {
    expect(() => parseScenario({ ...base, protocol: 'adk' })).toThrow(/^scenario: adk: is required with protocol adk/);
    expect(() => parseScenario({ ...base, adk: { app: 'a' } })).toThrow(/adk: is only read with protocol adk/);
    expect(() => parseScenario({ ...base, protocol: 'grpc' })).toThrow(/^scenario: protocol:/);
    expect(() => parseScenario({ ...base, protocol: 'adk', adk: { app: 'has space' } })).toThrow(/adk\.app: must be an ADK name/);
    expect(() => parseScenario({ ...base, protocol: 'adk', adk: { app: 'a', basePath: '/api/' } })).toThrow(/adk\.basePath: must be a path like \/api/);
    expect(() => parseScenario({ ...base, protocol: 'adk', adk: { app: 'a', basePath: 'api' } })).toThrow(/adk\.basePath/);
    expect(() => parseScenario({ ...base, protocol: 'adk', adk: { app: 'a', userId: 'x/y' } })).toThrow(/adk\.userId/);
    expect(() => parseScenario({ ...base, protocol: 'adk', adk: { app: 'a', authors: [] } })).toThrow(/adk\.authors/);
    expect(() => parseScenario({ ...base, protocol: 'adk', adk: { app: 'a', tyop: 1 } })).toThrow(/adk/);
  });
});

describe('withProtocol (the command-line flags)', () => {
  const native = parseScenario(base);
  const adk = parseScenario({ ...base, protocol: 'adk', adk: { app: 'from_file', streaming: true } });

  it('sets or overrides the app and base path, keeping the rest of the ADK target', () => {
    expect(withProtocol(native, { protocol: 'adk', app: 'mine' }).adk).toEqual({ app: 'mine' });
    expect(withProtocol(adk, { app: 'other', basePath: '/api' }).adk).toEqual({ app: 'other', streaming: true, basePath: '/api' });
    expect(withProtocol(adk, {})).toEqual(adk);
    expect(withProtocol(adk, { protocol: 'native' })).toMatchObject({ protocol: 'native', adk: undefined });
  });

  it('refuses flags that do not fit together', () => {
    expect(() => withProtocol(native, { protocol: 'adk' })).toThrow(/--protocol adk needs --app NAME/);
    expect(() => withProtocol(native, { app: 'a' })).toThrow(/--app and --base-path need --protocol adk/);
    expect(() => withProtocol(native, { protocol: 'adk', app: 'a', basePath: 'no-slash' })).toThrow(/adk\.basePath/);
  });

  it('any valid app name and base path round-trip through the flags and the schema', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_.-]{0,30}$/),
        fc.option(fc.stringMatching(/^(\/[A-Za-z0-9._~-]{1,8}){1,3}$/), { nil: undefined }),
        (app, basePath) => {
          const s: ScenarioFile = withProtocol(native, { protocol: 'adk', app, basePath });
          expect(s.adk).toEqual(basePath === undefined ? { app } : { app, basePath });
          expect(parseScenario(JSON.parse(JSON.stringify(s)))).toEqual(s);
        },
      ),
    );
  });
});
