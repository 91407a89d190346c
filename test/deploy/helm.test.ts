// The Helm chart, rendered by the real helm: `helm lint --strict` and `helm template` on the
// default values and on ci/central-5.yaml; every rendered object validated against its
// Kubernetes or Prometheus Operator schema (the JSON schemas that kubernetes-models and
// @kubernetes-models/prometheus-operator generate from the Kubernetes OpenAPI spec and the
// operator's CRDs); the agent and mock-provider arguments parsed by their own CLIs; the
// PrometheusRule against rules.yml and through promtool; values.schema.json's bounds, and
// that they are the agent's own (agent/config.ts's zod schema, read as JSON Schema).
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { agentServiceFields } from '../../agent/config.ts';
import { parseCliConfig } from '../../cli/agent.ts';
import { parseServeArgs } from '../../cli/serve.ts';
import { jobs } from '../../dashboards/config.ts';
import { sidecarDashboardLabel } from '../../dashboards/render/kubernetes.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { resolveSettings } from '../../cli/mock-provider.ts';
import { byName, CENTRAL_5, CHART, helm, type K8sObject, kindCounts, REPO, renderChart } from './helm.ts';

type Validator = (object: K8sObject) => void;
/** One schema per rendered kind; a kind without one fails the test. */
const SCHEMAS: Record<string, Validator> = {
  'apps/v1/Deployment': (o) => new Deployment(o as unknown as ConstructorParameters<typeof Deployment>[0]).validate(),
  'v1/Service': (o) => new Service(o as unknown as ConstructorParameters<typeof Service>[0]).validate(),
  'v1/ConfigMap': (o) => new ConfigMap(o as unknown as ConstructorParameters<typeof ConfigMap>[0]).validate(),
  'monitoring.coreos.com/v1/ServiceMonitor': (o) => new ServiceMonitor(o as unknown as ConstructorParameters<typeof ServiceMonitor>[0]).validate(),
  'monitoring.coreos.com/v1/PrometheusRule': (o) => new PrometheusRule(o as unknown as ConstructorParameters<typeof PrometheusRule>[0]).validate(),
};

function validateAll(objects: readonly K8sObject[]): void {
  for (const o of objects) {
    const validate = SCHEMAS[`${o.apiVersion}/${o.kind}`];
    if (!validate) throw new Error(`no schema for ${o.apiVersion} ${o.kind} (${o.metadata.name})`);
    expect(() => validate(o), `${o.kind}/${o.metadata.name}`).not.toThrow();
  }
}

interface Container {
  name: string;
  command: string[];
  args: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet?: { path: string; port: string } };
  readinessProbe: { httpGet?: { path: string; port: string } };
}
const podSpec = (d: K8sObject) => (d.spec as { template: { spec: { containers: Container[] } } }).template.spec;
const container = (d: K8sObject) => podSpec(d).containers[0];
const servicePorts = (s: K8sObject) => (s.spec as { ports: { name: string; port: number }[]; selector: Record<string, string> }).ports;

let defaults: K8sObject[];
let central: K8sObject[];

beforeAll(async () => {
  [defaults, central] = await Promise.all([renderChart(), renderChart([CENTRAL_5])]);
});

describe('helm lint --strict', () => {
  it.each([
    ['default values', []],
    ['ci/central-5.yaml', ['-f', CENTRAL_5]],
  ])('passes on %s', async (_name, extra) => {
    const result = await helm(['lint', '--strict', CHART, ...extra]);
    expect(result.stderr + result.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  });
});

describe('helm template: default values', () => {
  it('renders the agent, the mock provider and the dashboards, each valid against its schema', () => {
    expect(kindCounts(defaults)).toEqual({ Deployment: 2, Service: 2, ConfigMap: 3 });
    validateAll(defaults);
  });

  it('gives the agent arguments its own CLI accepts: static shares of the fleet budget over 3 pods, the chart mock provider', () => {
    const agent = container(byName(defaults, 'Deployment', 'qs-quotascope-agent'));
    expect(agent.command).toEqual(['quotascope']);
    expect(agent.args[0]).toBe('agent');
    const parsed = parseCliConfig(agent.args.slice(1), {});
    if (parsed === 'help') throw new Error('unexpected --help');
    expect(parsed.service).toMatchObject({ quotaSharing: 'static', admission: 'request', host: '0.0.0.0', port: 8080, permits: 10, tokensPerMinute: 900_000, maxWaitMs: 20_000 });
    expect(parsed.service.requestDeadlineMs).toBeUndefined(); // null: the service's own default
    expect(parsed.service.replicaShare).toBeCloseTo(1 / 3, 9);
    const mockService = byName(defaults, 'Service', 'qs-quotascope-mock-provider');
    expect(parsed.service.providerUrl).toBe(`http://qs-quotascope-mock-provider:${servicePorts(mockService)[0].port}`);
  });

  it('gives the mock provider arguments its own CLI accepts', () => {
    const mock = container(byName(defaults, 'Deployment', 'qs-quotascope-mock-provider'));
    expect(mock.args[0]).toBe('mock-provider');
    const settings = resolveSettings(mock.args.slice(1), {});
    expect(settings.listen).toMatchObject({ host: '0.0.0.0', port: 8090 });
    expect(settings.config).toMatchObject({ requestsPerMinute: 1000, tokensPerMinute: 1_000_000, countedTokens: 'input+output' });
  });

  it('probes /healthz on a named container port of every quotascope pod', () => {
    for (const name of ['qs-quotascope-agent', 'qs-quotascope-mock-provider']) {
      const c = container(byName(defaults, 'Deployment', name));
      for (const probe of [c.livenessProbe, c.readinessProbe]) {
        expect(probe.httpGet?.path).toBe('/healthz');
        expect(c.ports.map((p) => p.name)).toContain(probe.httpGet?.port);
      }
    }
  });

  it('passes every optional limiter value as a flag the agent accepts', async () => {
    const objects = await renderChart(
      [],
      [
        'limiter.quotaSharing=adaptive',
        'limiter.replicaShare=0.25',
        'limiter.estimatedTokensPerCall=6000',
        'limiter.adaptiveMaxPermits=30',
        'limiter.adaptiveLatencyMs=15000',
        'limiter.batchMaxPermits=4',
        'limiter.budgetWindow=bucket',
        'limiter.tokensPerMinute=1000000',
        'agent.streaming=true',
      ],
    );
    const parsed = parseCliConfig(container(byName(objects, 'Deployment', 'qs-quotascope-agent')).args.slice(1), {});
    if (parsed === 'help') throw new Error('unexpected --help');
    expect(parsed.service).toMatchObject({
      quotaSharing: 'adaptive',
      replicaShare: 0.25,
      estimatedTokensPerCall: 6000,
      adaptiveMaxPermits: 30,
      adaptiveLatencyMs: 15_000,
      batchMaxPermits: 4,
      budgetWindow: 'bucket',
      tokensPerMinute: 1_000_000,
      streaming: true,
    });
    const off = await renderChart([], ['limiter.batchMaxPermits=off']);
    const offParsed = parseCliConfig(container(byName(off, 'Deployment', 'qs-quotascope-agent')).args.slice(1), {});
    expect(offParsed !== 'help' && offParsed.service.batchMaxPermits).toBe('off');
  });

  it('serves your own agent module in mode serve, with arguments serve accepts', async () => {
    const objects = await renderChart([], ['agent.mode=serve', 'agent.agentModule=/app/my-agent.ts#rootAgent']);
    const agent = container(byName(objects, 'Deployment', 'qs-quotascope-agent'));
    expect(agent.args[0]).toBe('serve');
    const parsed = parseServeArgs(agent.args.slice(1), {});
    if (parsed === 'help') throw new Error('unexpected --help');
    expect(parsed).toMatchObject({ agent: '/app/my-agent.ts#rootAgent', host: '0.0.0.0', port: 8080, quotaSharing: 'static', permits: 10 });
  });

  it('passes every optional limiter value as a flag serve accepts in mode serve', async () => {
    const objects = await renderChart(
      [],
      [
        'agent.mode=serve',
        'agent.agentModule=/app/my-agent.ts',
        'limiter.quotaSharing=central',
        'limiter.estimatedTokensPerCall=6000',
        'limiter.maxWaiting=50',
        'limiter.batchMaxPermits=4',
        'limiter.budgetWindow=bucket',
        'limiter.admission=call',
        'limiter.requestDeadlineMs=90000',
        'agent.streaming=true',
      ],
    );
    const agent = container(byName(objects, 'Deployment', 'qs-quotascope-agent'));
    const env = Object.fromEntries((agent.env ?? []).map((e) => [e.name, e.value ?? '']));
    const parsed = parseServeArgs(agent.args.slice(1), env);
    if (parsed === 'help') throw new Error('unexpected --help');
    expect(parsed).toMatchObject({ quotaSharing: 'central', estimatedTokensPerCall: 6000, maxWaiting: 50, batchMaxPermits: 4, budgetWindow: 'bucket', admission: 'call', requestDeadlineMs: 90_000, streaming: true });
    const adaptive = await renderChart([], ['agent.mode=serve', 'agent.agentModule=/app/my-agent.ts', 'limiter.quotaSharing=adaptive', 'limiter.adaptiveMaxPermits=30', 'limiter.adaptiveLatencyMs=15000']);
    const adaptiveParsed = parseServeArgs(container(byName(adaptive, 'Deployment', 'qs-quotascope-agent')).args.slice(1), {});
    expect(adaptiveParsed !== 'help' && adaptiveParsed).toMatchObject({ quotaSharing: 'adaptive', adaptiveMaxPermits: 30, adaptiveLatencyMs: 15_000 });
  });
});

describe('helm template: ci/central-5.yaml', () => {
  it('renders 5 agent pods, Redis, the mock provider, a ServiceMonitor, a PrometheusRule and the dashboards, each valid', () => {
    expect(kindCounts(central)).toEqual({ Deployment: 3, Service: 3, ConfigMap: 3, ServiceMonitor: 1, PrometheusRule: 1 });
    validateAll(central);
    expect((byName(central, 'Deployment', 'qs-quotascope-agent').spec as { replicas: number }).replicas).toBe(5);
  });

  it('points every agent at the chart Redis for the central bucket, with a fifth of the budget as the fallback share', () => {
    const agent = container(byName(central, 'Deployment', 'qs-quotascope-agent'));
    const env = Object.fromEntries((agent.env ?? []).map((e) => [e.name, e.value ?? '']));
    const parsed = parseCliConfig(agent.args.slice(1), env);
    if (parsed === 'help') throw new Error('unexpected --help');
    expect(parsed.service.quotaSharing).toBe('central');
    expect(parsed.service.replicaShare).toBeCloseTo(0.2, 9);
    const redisService = byName(central, 'Service', 'qs-quotascope-redis');
    expect(parsed.service.redisUrl).toBe(`redis://qs-quotascope-redis:${servicePorts(redisService)[0].port}`);
    const redis = container(byName(central, 'Deployment', 'qs-quotascope-redis'));
    expect(redis.args).toEqual(expect.arrayContaining(['--save', '', '--appendonly', 'no']));
  });

  it('scrapes both Services under the job names the dashboards and rules use', () => {
    const monitor = byName(central, 'ServiceMonitor', 'qs-quotascope').spec as {
      jobLabel: string;
      selector: { matchLabels: Record<string, string>; matchExpressions: { key: string; operator: string }[] };
      endpoints: { port: string; path: string }[];
    };
    const services = central.filter((o) => o.kind === 'Service');
    const selected = services.filter(
      (s) =>
        Object.entries(monitor.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v) &&
        monitor.selector.matchExpressions.every((e) => e.operator === 'Exists' && s.metadata.labels?.[e.key] !== undefined),
    );
    expect(selected.map((s) => s.metadata.labels?.[monitor.jobLabel]).sort()).toEqual([jobs.agent, jobs.mockProvider].sort());
    for (const s of selected) expect(servicePorts(s).map((p) => p.name)).toContain(monitor.endpoints[0].port);
    expect(monitor.endpoints[0].path).toBe('/metrics');
  });

  it('holds the same rule groups as the generated rules.yml', () => {
    const generated = parseYaml(readFileSync(join(REPO, 'dashboards/generated/prometheus/rules.yml'), 'utf8')) as { groups: unknown[] };
    const rule = byName(central, 'PrometheusRule', 'qs-quotascope');
    expect((rule.spec as { groups: unknown[] }).groups).toEqual(generated.groups);
  });

  it('holds rule groups the real promtool accepts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'qs-rules-'));
    try {
      const file = join(dir, 'rules.yml');
      writeFileSync(file, stringifyYaml({ groups: (byName(central, 'PrometheusRule', 'qs-quotascope').spec as { groups: unknown[] }).groups }));
      const { stdout } = await promisify(execFile)(requireTool('promtool'), ['check', 'rules', file]);
      expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ships one ConfigMap per generated dashboard with the sidecar label', () => {
    const maps = central.filter((o) => o.kind === 'ConfigMap');
    const files = readdirSync(join(REPO, 'dashboards/generated/grafana/dashboards')).sort();
    expect(maps.flatMap((m) => Object.keys(m.data as Record<string, string>)).sort()).toEqual(files);
    for (const m of maps) {
      expect(m.metadata.labels).toMatchObject(sidecarDashboardLabel);
      for (const [file, text] of Object.entries(m.data as Record<string, string>)) {
        const generated = JSON.parse(readFileSync(join(REPO, 'dashboards/generated/grafana/dashboards', file), 'utf8'));
        expect(JSON.parse(text)).toEqual(generated);
      }
    }
  });
});

describe('values are validated', () => {
  it.each([
    ['limiter.permits=0', "at '/limiter/permits'"],
    ['limiter.permits=10001', "at '/limiter/permits'"],
    ['agent.replicas=0', "at '/agent/replicas'"],
    ['limiter.tokensPerMinute=0', "at '/limiter/tokensPerMinute'"],
    ['limiter.replicaShare=1.5', "at '/limiter/replicaShare'"],
    ['limiter.maxWaitMs=3600001', "at '/limiter/maxWaitMs'"],
    ['limiter.requestDeadlineMs=999', "at '/limiter/requestDeadlineMs'"],
    ['limiter.admission=door', "at '/limiter/admission'"],
    ['mockProvider.port=70000', "at '/mockProvider/port'"],
    ['limiter.quotaSharing=shared', "at '/limiter/quotaSharing'"],
    ['agent.replicaz=3', "'replicaz' not allowed"],
  ])('values.schema.json rejects %s', async (set, message) => {
    await expect(renderChart([], [set])).rejects.toThrow(message);
  });

  it.each([
    [['limiter.quotaSharing=central', 'redis.enabled=false'], 'limiter.quotaSharing central: set redis.enabled, redis.externalUrl or redis.externalUrlSecret.name'],
    [['agent.mode=serve'], 'agent.agentModule: required when agent.mode is serve'],
    [['mockProvider.enabled=false'], 'agent.provider.url: required when mockProvider.enabled is false'],
  ])('the templates refuse %j naming the value', async (sets, message) => {
    await expect(renderChart([], sets)).rejects.toThrow(message);
  });

  it('an external Redis URL from a Secret reaches the agent as QUOTASCOPE_AGENT_REDIS_URL', async () => {
    const objects = await renderChart([], ['limiter.quotaSharing=central', 'redis.enabled=false', 'redis.externalUrlSecret.name=my-redis']);
    expect(objects.some((o) => o.metadata.name === 'qs-quotascope-redis')).toBe(false);
    const env = container(byName(objects, 'Deployment', 'qs-quotascope-agent')).env ?? [];
    expect(env.find((e) => e.name === 'QUOTASCOPE_AGENT_REDIS_URL')?.valueFrom).toEqual({ secretKeyRef: { name: 'my-redis', key: 'url' } });
  });
});

describe("values.schema.json's bounds are the agent's", () => {
  interface JsonSchema {
    type?: string | string[];
    properties?: Record<string, JsonSchema>;
    oneOf?: JsonSchema[];
    anyOf?: JsonSchema[];
    enum?: unknown[];
    const?: unknown;
    pattern?: string;
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    exclusiveMaximum?: number;
  }
  const chart = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as JsonSchema;
  // Per-model quota values (N or MODEL=N,…) are a custom type: no JSON Schema of their own.
  const agentSchema = z.toJSONSchema(agentServiceFields, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const agentField = (key: string) => {
    const field = agentSchema.properties?.[key];
    if (!field) throw new Error(`agent/config.ts has no field ${key}`);
    return field;
  };
  const isNumeric = (node: JsonSchema) => [node.type].flat().some((t) => t === 'integer' || t === 'number');
  /** The numeric branch of a value: the node itself, or its one numeric oneOf/anyOf branch. */
  const numericPart = (node: JsonSchema): JsonSchema | undefined => (isNumeric(node) ? node : [...(node.oneOf ?? []), ...(node.anyOf ?? [])].find(isNumeric));
  const bounds = (node: JsonSchema | undefined) => ({
    type: [node?.type].flat().find((t) => t === 'integer' || t === 'number'),
    minimum: node?.minimum,
    maximum: node?.maximum,
    exclusiveMinimum: node?.exclusiveMinimum,
    exclusiveMaximum: node?.exclusiveMaximum,
  });
  const limiterValues = Object.entries(chart.properties?.limiter.properties ?? {});
  /** Chart value → the agent option it becomes (limiter.name is --limiter-name). */
  const pairs: [string, JsonSchema, string][] = [
    ...limiterValues.map(([key, node]): [string, JsonSchema, string] => [`limiter.${key}`, node, key === 'name' ? 'limiterName' : key]),
    ['agent.toolDelayMs', chart.properties?.agent.properties?.toolDelayMs as JsonSchema, 'toolDelayMs'],
    ['agent.provider.httpTimeoutMs', chart.properties?.agent.properties?.provider.properties?.httpTimeoutMs as JsonSchema, 'httpTimeoutMs'],
  ];

  it('covers every limiter value', () => {
    expect(limiterValues.length).toBeGreaterThan(10);
    for (const [, , key] of pairs) expect(() => agentField(key)).not.toThrow();
  });

  // A per-model value (N or MODEL=N,…) has no JSON Schema of its own; the chart sets one N for every model.
  const perModel = (key: string) => { const { default: _default, ...schema } = agentField(key) as JsonSchema & { default?: unknown }; return Object.keys(schema).length === 0; };
  it.each(pairs.filter(([, node, key]) => numericPart(node) !== undefined && !perModel(key)).map(([path, node, key]) => ({ path, node, key })))(
    '$path: the same type, minimum and maximum as the agent option $key',
    ({ node, key }) => {
      const agentPart = numericPart(agentField(key));
      expect(agentPart, `${key} is numeric in agent/config.ts`).toBeDefined();
      expect(bounds(numericPart(node))).toEqual(bounds(agentPart));
    },
  );

  it('enumerations and the limiter name pattern are the agent\'s', () => {
    for (const [path, node, key] of pairs) {
      const field = agentField(key);
      if (node.enum) expect(node.enum, path).toEqual(field.enum);
      if (node.pattern) expect(node.pattern, path).toBe(field.pattern);
      const constants = (node.oneOf ?? []).flatMap((b) => (b.const === undefined ? [] : [b.const]));
      if (constants.length) expect(constants, path).toEqual((field.anyOf ?? field.oneOf ?? []).flatMap((b) => (b.const === undefined ? [] : [b.const])));
    }
  });
});

describe('values documentation', () => {
  it('the chart README has a row for every value of values.schema.json, and values.yaml sets no other', () => {
    interface SchemaNode {
      properties?: Record<string, SchemaNode>;
    }
    // Objects without declared properties (resources, security contexts) are one value each.
    const leaves: string[] = [];
    const walk = (node: SchemaNode, path: string) => {
      if (node.properties) for (const [k, child] of Object.entries(node.properties)) walk(child, path ? `${path}.${k}` : k);
      else leaves.push(path);
    };
    walk(JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as SchemaNode, '');
    const readme = readFileSync(join(CHART, 'README.md'), 'utf8');
    const documented = new Set([...readme.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]));
    expect(leaves.filter((l) => !documented.has(l))).toEqual([]);
    expect([...documented].filter((d) => !leaves.includes(d))).toEqual([]);
  });
});
