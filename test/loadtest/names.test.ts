// The literals that config files keep (compose, the k6 scenario defaults) match the one
// product source they copy, and the stack's Prometheus config is real YAML.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { samplePublishedAgents } from '../../agent/sample-shapes.ts';
import { TREE_NAMES } from '../../agent/tree-shapes.ts';
import { WORKED_EXAMPLE, WORKED_EXAMPLE_TOKENS_PER_MINUTE } from '../../agent/worked-example.ts';
import { jobs } from '../../dashboards/config.ts';
import { DEFAULT_MAX_WAIT_MS } from '../../instrumentation/defaults.ts';
import { DEFAULT_INPUT_TOKENS } from '../../loadtest/scenario/request.ts';
import { prometheusConfig } from '../../loadtest/stack/prometheus.ts';

const repo = new URL('../../', import.meta.url);

describe('one source for each default and name', () => {
  it("docker-compose.yml's agent and mock provider run the worked example", () => {
    const compose = parseYaml(readFileSync(new URL('docker-compose.yml', repo), 'utf8'), { merge: true }) as {
      services: Record<string, { environment?: Record<string, string>; command?: string[] }>;
    };
    const env = compose.services['agent-1'].environment ?? {};
    expect(Number(env.QUOTASCOPE_AGENT_PERMITS)).toBe(WORKED_EXAMPLE.permits);
    expect(Number(env.QUOTASCOPE_AGENT_TOKENS_PER_MINUTE)).toBe(WORKED_EXAMPLE_TOKENS_PER_MINUTE);
    expect(Number(env.QUOTASCOPE_AGENT_MAX_WAIT_MS)).toBe(DEFAULT_MAX_WAIT_MS);
    expect(Number(env.QUOTASCOPE_AGENT_REPLICA_SHARE)).toBeCloseTo(1 / WORKED_EXAMPLE.replicas, 8);
    const mockFlags = compose.services['mock-provider'].command ?? [];
    expect(mockFlags).toContain(`--requests-per-minute=${WORKED_EXAMPLE.quotaRequestsPerMinute}`);
    expect(mockFlags).toContain(`--tokens-per-minute=${WORKED_EXAMPLE.quotaTokensPerMinute}`);
  });

  it("the worked example's maxWait is the wrapper's default, and scenario files default to its input tokens", () => {
    expect(WORKED_EXAMPLE.maxWaitMs).toBe(DEFAULT_MAX_WAIT_MS);
    expect(DEFAULT_INPUT_TOKENS).toBe(WORKED_EXAMPLE.inputTokensPerCall);
  });

  it('GET /v1/agents publishes every tree, with 5 model calls per review request', () => {
    const agents = samplePublishedAgents();
    expect(agents.map((a) => a.name)).toEqual([...TREE_NAMES]);
    expect(agents.find((a) => a.name === 'review')).toEqual({
      name: 'review',
      modelCallsPerRequest: 5,
      shape: { parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1, branchOutputsPerStep: 2 },
    });
    expect(agents.find((a) => a.name === 'tools')?.modelCallsPerRequest).toBeNull();
  });

  it("the stack's Prometheus config parses back to the jobs and rules it was given", () => {
    const text = prometheusConfig({ jobs: { [jobs.agent]: ['127.0.0.1:1', '127.0.0.1:2'], [jobs.mockProvider]: ['127.0.0.1:3'] }, dataDir: '/tmp/x', scrapeIntervalSeconds: 2 }, '/a "quoted"/rules.yml');
    expect(parseYaml(text)).toEqual({
      global: { scrape_interval: '2s', evaluation_interval: '2s' },
      rule_files: ['/a "quoted"/rules.yml'],
      scrape_configs: [
        { job_name: jobs.agent, static_configs: [{ targets: ['127.0.0.1:1', '127.0.0.1:2'] }] },
        { job_name: jobs.mockProvider, static_configs: [{ targets: ['127.0.0.1:3'] }] },
      ],
    });
  });
});
