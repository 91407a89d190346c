import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Three tiers, one project each: `npm test` runs them all, `npm run unit` the unit tier.
// - integration: files that start sockets or processes (servers on port 0, node child
//   processes, a real redis-server);
// - e2e: files that drive the real tools end to end (k6, Prometheus, promtool, chromium,
//   helm, docker compose, npm itself);
// - unit: every other test file, so a new file always runs somewhere. The unit tier's setup
//   refuses sockets and processes: a file that needs them belongs in a list below.
// Files run in forked processes, two at a time on a 2-core machine.
const integration = [
  'test/agent/deep-tree-burst.test.ts',
  'test/agent/access-log.test.ts',
  'test/agent/cli.test.ts',
  'test/agent/counted-tokens.test.ts',
  'test/agent/lanes.test.ts',
  'test/agent/limits.test.ts',
  'test/agent/model-quotas.test.ts',
  'test/agent/own-wrappers.test.ts',
  'test/agent/quota-sharing.test.ts',
  'test/agent/request-admission.test.ts',
  'test/agent/door-abandon.test.ts',
  'test/agent/serve-reliability.test.ts',
  'test/agent/serve.test.ts',
  'test/agent/server-limits.test.ts',
  'test/agent/service.test.ts',
  'test/agent/tracing.test.ts',
  'test/agent/trees.test.ts',
  'test/agent/two-model-quota.test.ts',
  'test/bench/**/*.test.ts',
  'test/chaos/**/*.test.ts',
  'test/instrumentation/quota-step-down-live-budget.test.ts',
  'test/cli/cli.test.ts',
  'test/cli/node-version.test.ts',
  'test/cli/replace-files.test.ts',
  'test/dashboards/cli-messages.test.ts',
  'test/dashboards/generate.test.ts',
  'test/instrumentation/entries.test.ts',
  'test/instrumentation/redis-budget-health.test.ts',
  'test/instrumentation/request-admission-redis.test.ts',
  'test/instrumentation/redis-token-budget.test.ts',
  'test/instrumentation/redis-window-rule.test.ts',
  'test/loadtest/measurement.test.ts',
  'test/loadtest/model-plans.test.ts',
  'test/loadtest/deep-tree-plan.test.ts',
  'test/loadtest/forward-run.test.ts',
  'test/loadtest/plan-tree.test.ts',
  'test/loadtest/planner.test.ts',
  'test/loadtest/report-keep.test.ts',
  'test/loadtest/run-outcome.test.ts',
  'test/mock-provider/bad-input.test.ts',
  'test/mock-provider/bounds.test.ts',
  'test/mock-provider/cli.test.ts',
  'test/mock-provider/faults.test.ts',
  'test/mock-provider/genai.test.ts',
  'test/mock-provider/openai.test.ts',
  'test/mock-provider/quota-http.test.ts',
  'test/mock-provider/quota-keys.test.ts',
  'test/mock-provider/quota-scope.test.ts',
  'test/mock-provider/routing.test.ts',
  'test/mock-provider/server-limits.test.ts',
  'test/mock-provider/vertex.test.ts',
];
const e2e = [
  'test/cli/npm-signals.test.ts',
  'test/cli/tools-sets.test.ts',
  'test/compose/**/*.test.ts',
  'test/dashboards/config-injection.test.ts',
  'test/dashboards/grafana-only.test.ts',
  'test/dashboards/live-queries.test.ts',
  'test/dashboards/promtool.test.ts',
  'test/deploy/helm.test.ts',
  'test/deploy/testrun.test.ts',
  'test/deploy/thresholds.test.ts',
  'test/loadtest/adk-protocol.test.ts',
  'test/loadtest/k6-e2e.test.ts',
  'test/loadtest/k6-outcomes.test.ts',
  'test/loadtest/npm-start.test.ts',
  'test/loadtest/report-browser.test.ts',
  'test/loadtest/start-agent.test.ts',
  'test/loadtest/sweep-e2e.test.ts',
  'test/package/**/*.test.ts',
];

// A listed file that no longer exists is a stale entry: say so rather than match nothing.
for (const file of [...integration, ...e2e].filter((entry) => !entry.includes('*'))) {
  if (!existsSync(new URL(file, import.meta.url))) throw new Error(`vitest.config.ts lists ${file}, which does not exist`);
}

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...integration, ...e2e], setupFiles: ['test/support/unit-tier.ts'] } },
      { extends: true, test: { name: 'integration', include: integration } },
      { extends: true, test: { name: 'e2e', include: e2e } },
    ],
  },
});
