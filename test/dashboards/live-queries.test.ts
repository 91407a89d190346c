// Every panel query, variable query, annotation and rule expression is real: the test
// starts the mock provider and the agent service in-process, a real Prometheus (scrape
// interval 1 s, the generated rules loaded, remote-write receiver on) and a short k6 load
// that remote-writes its metrics, then evaluates every expression through Prometheus'
// HTTP API. No expression may error. The run is deliberately not quiet (1 permit, 300 ms
// calls arriving faster than one permit serves them, 20 % random 429s, 5 % HTTP 503s), so even the panels that stay empty in a quiet
// run (their specs say why) must return data; only a permit leak cannot be provoked.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentService } from '../../agent/index.ts';
import { buildAlerts, buildRecordingRules } from '../../dashboards/alerts.ts';
import { defaultConfig, jobs } from '../../dashboards/config.ts';
import { generatedPaths } from '../../dashboards/files.ts';
import { generatedDir } from '../../dashboards/generate.ts';
import { buildDashboards } from '../../dashboards/panels/index.ts';
import { instantiate, panelsOf } from '../../dashboards/panels/spec.ts';
import { alertAnnotationExpr } from '../../dashboards/render/grafana-dashboard.ts';
import { runK6 } from '../../loadtest/drive/runner.ts';
import { ProcessGroup } from '../../loadtest/stack/processes.ts';
import { startPrometheus } from '../../loadtest/stack/prometheus.ts';
import { parseScenario } from '../../loadtest/scenario/schema.ts';
import { faultsSchema, startMockProvider } from '../../mock-provider/index.ts';

/** Panels without data even in this run, and why. */
const emptyEvenUnderStress: Record<string, string> = {
  'quotascope-limiter/permits-reclaimed': 'a reclaim needs a call stuck past the maximum call time (minutes)',
};
const rateInterval = '1m';
const dashboards = buildDashboards(defaultConfig);
const alerts = buildAlerts(defaultConfig);
const recordingRules = buildRecordingRules(defaultConfig);

interface Evaluation {
  error?: string;
  warnings?: string[];
  series: number;
}

let prometheusUrl = '';
const cleanups: (() => Promise<unknown> | undefined)[] = [];

async function evaluate(expr: string): Promise<Evaluation> {
  const res = await fetch(`${prometheusUrl}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    warnings?: string[];
    data?: { result: unknown[] };
  };
  if (body.status !== 'success') return { error: body.error ?? `HTTP ${res.status}`, series: 0 };
  return { warnings: body.warnings, series: body.data?.result.length ?? 0 };
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qs-live-queries-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));

  // Short calls, and enough trouble that every error counter gets a series: 2 requests/s of
  // 5 calls of 300 ms need 3 permits but get 1, so the queue outgrows the 3 s request
  // deadline (timeouts); 20 % of calls are throttled (429s; the limiter's first backoff, < 500 ms,
  // fits in maxWait, so it retries) and 5 % answer 503 (faults).
  const mock = await startMockProvider(
    {
      seed: 7,
      timeToFirstTokenMs: { kind: 'fixed', value: 300 },
      perOutputTokenMs: { kind: 'fixed', value: 0.5 },
      outputTokens: { kind: 'fixed', value: 40 },
      throttleProbability: 0.2,
      faults: faultsSchema.parse({ http503Probability: 0.05 }),
    },
    { port: 0 },
  );
  cleanups.unshift(() => mock.close());
  // Calls of an admitted request wait until its deadline: a 3 s deadline (the calls' time stated) makes the queue's timeouts come in seconds.
  const agent = await startAgentService({ port: 0, providerUrl: mock.url, permits: 1, maxWaitMs: 1000, requestDeadlineMs: 3000, expectedCallMs: 300 });
  cleanups.unshift(() => agent.close());

  const group = new ProcessGroup(dir);
  cleanups.unshift(() => group.stopAll());
  prometheusUrl = await startPrometheus(group, {
    jobs: {
      [jobs.agent]: [new URL(agent.url).host],
      [jobs.mockProvider]: [new URL(mock.url).host],
    },
    dataDir: join(dir, 'prometheus'),
    scrapeIntervalSeconds: 1,
    rulesFile: join(generatedDir, generatedPaths.rules),
  });
  await waitFor(
    'both scrape targets up',
    async () => {
      const up = await fetch(`${prometheusUrl}/api/v1/query?query=up`).then((r) => r.json());
      const result = (up as { data: { result: { value: [number, string] }[] } }).data.result;
      return result.length === 2 && result.every((r) => r.value[1] === '1');
    },
    20_000,
  );

  const scenario = parseScenario({
    name: 'dashboards-live',
    defaults: { tree: 'review', inputTokensPerCall: 200, trafficClass: 'interactive' },
    arrivals: [{ kind: 'constant', start: 0, perMinute: 120, duration: 6 }],
    gracefulStop: 10,
  });
  const result = await runK6({ scenario, target: agent.url, reportDir: join(dir, 'k6'), runId: 'live-queries', prometheusUrl });
  expect(result.exitCode, 'k6 exit code (see the k6.log in the report dir)').toBe(0);
  expect(result.summary?.requests ?? 0).toBeGreaterThan(5);

  // Two more scrapes and rule evaluations after the load.
  await new Promise((r) => setTimeout(r, 2500));
}, 180_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
});

describe('every dashboard and rule expression against a live Prometheus', () => {
  it('panel queries evaluate without error and return data', async () => {
    const problems: string[] = [];
    for (const dashboard of dashboards) {
      for (const panel of panelsOf(dashboard)) {
        for (const target of panel.targets) {
          const expr = instantiate(target.expr, { rateInterval });
          const result = await evaluate(expr);
          const where = `${dashboard.uid}/${panel.key} ${target.legend}`;
          if (result.error) problems.push(`${where}: error ${result.error} in ${expr}`);
          else if (result.warnings?.length) problems.push(`${where}: warnings ${result.warnings.join('; ')}`);
          else if (result.series === 0 && !emptyEvenUnderStress[`${dashboard.uid}/${panel.key}`]) {
            problems.push(`${where}: no data from ${expr}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('the panels allowed to be empty have a quiet-run reason in their spec', () => {
    for (const key of Object.keys(emptyEvenUnderStress)) {
      const [uid, panelKey] = key.split('/');
      const panel = panelsOf(dashboards.find((d) => d.uid === uid)!).find((p) => p.key === panelKey);
      expect(panel?.quietRunEmpty, key).toBeTruthy();
    }
  });

  it('variable queries return label values', async () => {
    const problems: string[] = [];
    for (const dashboard of dashboards) {
      for (const variable of dashboard.variables) {
        const metric = variable.selector ? `${variable.metric}{${variable.selector}}` : variable.metric;
        const expr = instantiate(`count by (${variable.labelName}) (${metric})`, { rateInterval });
        const result = await evaluate(expr);
        if (result.error || result.series === 0) {
          problems.push(`${dashboard.uid} $${variable.name}: ${result.error ?? 'no values'} from ${expr}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('recording rules evaluate and have recorded data', async () => {
    const problems: string[] = [];
    for (const rule of recordingRules) {
      const direct = await evaluate(rule.expr);
      const recorded = await evaluate(rule.record);
      if (direct.error) problems.push(`${rule.record}: error ${direct.error}`);
      else if (recorded.series === 0) problems.push(`${rule.record}: nothing recorded`);
    }
    expect(problems).toEqual([]);
  });

  it('alert expressions and the alert annotation evaluate without error', async () => {
    // An alert expression returns series only while its condition holds (most need minutes),
    // so it may be empty here; the recording rules above prove its inputs are there.
    for (const expr of [...alerts.map((a) => a.expr), alertAnnotationExpr]) {
      const result = await evaluate(expr);
      expect(result.error, expr).toBeUndefined();
    }
    // Prometheus loaded every generated rule and evaluates them without error.
    const rules = (await fetch(`${prometheusUrl}/api/v1/rules`).then((r) => r.json())) as {
      data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
    };
    const loaded = rules.data.groups.flatMap((g) => g.rules);
    expect(loaded.length).toBe(recordingRules.length + alerts.length);
    expect(loaded.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`)).toEqual([]);
  });
});
