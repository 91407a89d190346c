// The dashboards config: defaults are quotascope's own stack, every field is bounded and a
// bad value names its field; selectors are PromQL matcher lists, and the labels guessed for
// the synthetic test series satisfy them.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultConfig, jobs, parseDashboardsConfig, selectorsOf } from '../../dashboards/config.ts';
import { loadConfigFile } from '../../dashboards/generate.ts';
import { type Matcher, labelsRejected, labelsSatisfying, matchesValue, parseMatchers } from '../../dashboards/selector.ts';

describe('dashboards config', () => {
  it('defaults to the scrape jobs and Grafana identity of quotascope\'s own stack', () => {
    expect(defaultConfig.selectors).toEqual({ agent: `job="${jobs.agent}"`, mockProvider: `job="${jobs.mockProvider}"`, k6: '' });
    expect(defaultConfig.datasource.uid).toBe('quotascope-prometheus');
    expect(defaultConfig.alerts.severity.ProviderRateLimitedDespiteLimiter).toBe('critical');
    expect(defaultConfig.alerts.for.LimiterTokenEstimateDrift).toBe('15m');
    expect(selectorsOf(defaultConfig).limiter).toBe(`job="${jobs.agent}", job=~"$job", instance=~"$instance", limiter=~"$limiter"`);
  });

  it('the example custom-stack.yaml selects job="my-agents" with datasource my-prom and no mock provider', () => {
    const config = loadConfigFile(new URL('../../dashboards/examples/custom-stack.yaml', import.meta.url).pathname);
    expect(config.selectors).toMatchObject({ agent: 'job="my-agents"', mockProvider: null });
    expect(config.datasource.uid).toBe('my-prom');
    expect(config.alerts.severity.LimiterTimeouts).toBe('critical');
    expect(config.alerts.severity.LimiterPermitLeak).toBe('critical');
    expect(config.alerts.labels).toEqual({ team: 'agents' });
  });

  it('rejects out-of-bound and malformed values, naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [{ thresholds: { acquireWarnFractionOfMaxWait: 0 } }, /^thresholds\.acquireWarnFractionOfMaxWait: /],
      [{ thresholds: { acquireRiseFactor: 1000 } }, /^thresholds\.acquireRiseFactor: /],
      [{ thresholds: { budgetExhaustedFractionOfCapacity: 1.5 } }, /^thresholds\.budgetExhaustedFractionOfCapacity: /],
      [{ selectors: { agent: '' } }, /^selectors\.agent: needs at least one matcher/],
      [{ selectors: { agent: 'job=~".*"' } }, /^selectors\.agent: needs at least one matcher/],
      [{ selectors: { agent: 'job="a" namespace="b"' } }, /^selectors\.agent: not a list of label matchers/],
      [{ selectors: { agent: 'job=~"("' } }, /^selectors\.agent: .*not a valid regular expression/],
      [{ selectors: { agent: 'job=`a`' } }, /^selectors\.agent: backticks/],
      [{ selectors: { k6: 'scenario=' } }, /^selectors\.k6: not a list of label matchers/],
      [{ datasource: { url: 'not a url' } }, /^datasource\.url: /],
      [{ datasource: { scrapeInterval: '0s' } }, /^datasource\.scrapeInterval: 0s is outside/],
      [{ windows: { leak: '2d' } }, /^windows\.leak: 2d is outside/],
      [{ alerts: { labels: { severity: 'x' } } }, /^alerts\.labels\.severity: /],
      [{ alerts: { labels: { 'bad-name': 'x' } } }, /^alerts\.labels\.bad-name: /],
      [{ alerts: { severity: { LimiterTimeouts: 'page' } } }, /^alerts\.severity\.LimiterTimeouts: /],
      [{ kubernetes: { namespace: 'Upper' } }, /^kubernetes\.namespace: /],
      [{ grafana: { dashboardsPath: 'relative' } }, /^grafana\.dashboardsPath: /],
    ];
    for (const [input, message] of cases) {
      expect(() => parseDashboardsConfig(input), JSON.stringify(input)).toThrow(message);
    }
    // The estimate band needs low < high.
    expect(() => parseDashboardsConfig({ thresholds: { estimateBand: { low: 1, high: 1 } } })).toThrow(/thresholds\.estimateBand: low must be below high/);
  });

  it('accepts any label matchers, including namespaces, regexes and negative matchers', () => {
    expect(parseMatchers('namespace="prod", job=~"a|b", cluster!="staging", env!~"dev.*"')).toEqual([
      { label: 'namespace', op: '=', value: 'prod' },
      { label: 'job', op: '=~', value: 'a|b' },
      { label: 'cluster', op: '!=', value: 'staging' },
      { label: 'env', op: '!~', value: 'dev.*' },
    ]);
    expect(parseMatchers('job="with \\"quotes\\""')).toEqual([{ label: 'job', op: '=', value: 'with "quotes"' }]);
    expect(parseMatchers('')).toEqual([]);
    // PromQL allows a trailing comma; joined selectors stay valid.
    expect(selectorsOf(parseDashboardsConfig({ selectors: { k6: 'scenario="a", ' } })).k6).toBe('scenario="a", scenario=~"$scenario"');
  });
});

describe('labels for synthetic test series', () => {
  const value = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
  const matcher: fc.Arbitrary<Matcher> = fc.oneof(
    fc.record({ label: fc.constantFrom('job', 'namespace', 'cluster'), op: fc.constant('=' as const), value }),
    fc.record({ label: fc.constantFrom('job', 'namespace', 'cluster'), op: fc.constant('!=' as const), value }),
    fc.record({
      label: fc.constantFrom('job', 'namespace', 'cluster'),
      op: fc.constant('=~' as const),
      value: fc.array(value, { minLength: 1, maxLength: 3 }).map((xs) => xs.join('|')),
    }),
    fc.record({ label: fc.constantFrom('job', 'namespace', 'cluster'), op: fc.constant('!~' as const), value: value.map((v) => `${v}.*`) }),
  );

  it('satisfy every matcher they are guessed for (or say they cannot), and the rejected set fails one', () => {
    fc.assert(
      fc.property(fc.array(matcher, { minLength: 1, maxLength: 4 }), (matchers) => {
        let labels: Record<string, string>;
        try {
          labels = labelsSatisfying(matchers, { job: 'agents' });
        } catch (error) {
          expect((error as Error).message).toMatch(/cannot guess a value of label/);
          return;
        }
        for (const m of matchers) expect(matchesValue(m, labels[m.label] ?? ''), JSON.stringify({ m, labels })).toBe(true);
        expect(labels.job).toBeTruthy();
        const rejected = labelsRejected(matchers, labels);
        if (rejected) expect(matchers.some((m) => !matchesValue(m, rejected[m.label] ?? ''))).toBe(true);
      }),
    );
  });
});
