// The docker compose stack cannot run here (no Docker engine), so it is checked piece by piece
// with real tools: Debian's docker-compose validates and normalises the file, promtool and
// amtool check the compose-only configs, the compose commands of the mock provider and the
// agent are started as real processes, and the Dockerfile's build steps run in a scratch copy.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseCliConfig } from '../../cli/agent.ts';
import { jobs } from '../../dashboards/config.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import { plan, reviewAgentExample } from '../../loadtest/planner/index.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { samplesOf } from '../../loadtest/measure/prometheus-text.ts';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const password = 'test-only-password';

interface Service {
  image?: string;
  build?: { context: string };
  command?: string[];
  /** A variable listed without a value (null) passes the shell's through: unset when the shell has none. */
  environment?: Record<string, string | null>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  volumes?: string[];
  profiles?: string[];
}

const composeBinary = (): string => requireTool('docker-compose');

async function composeConfig(env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(composeBinary(), ['-f', 'docker-compose.yml', 'config'], { cwd: repo, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function envWithout(name: string): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[name];
  return env;
}

let services: Record<string, Service>;

/** The services as `docker-compose config` sets them with `shell` added to the environment it reads. */
async function composedServices(shell: NodeJS.ProcessEnv): Promise<Record<string, Service>> {
  const result = await composeConfig({ ...envWithout('SCENARIO'), GRAFANA_ADMIN_PASSWORD: password, ...shell });
  expect(result.code).toBe(0);
  return (parseYaml(result.stdout) as { services: Record<string, Service> }).services;
}

/** A container's environment as compose sets it: a variable without a value (the shell had none) is not set. */
function containerEnv(service: Service): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).filter((entry): entry is [string, string] => entry[1] !== null));
}

beforeAll(async () => {
  const result = await composeConfig({ ...envWithout('SCENARIO'), GRAFANA_ADMIN_PASSWORD: password });
  expect(result.stderr).not.toMatch(/error/i);
  expect(result.code).toBe(0);
  services = (parseYaml(result.stdout) as { services: Record<string, Service> }).services;
});

describe('docker-compose.yml', () => {
  it('is valid for docker-compose with GRAFANA_ADMIN_PASSWORD set, and refuses to run without it', async () => {
    const without = await composeConfig(envWithout('GRAFANA_ADMIN_PASSWORD'));
    expect(without.code).not.toBe(0);
    expect(without.stderr).toContain('set GRAFANA_ADMIN_PASSWORD');
    expect(services.grafana.environment?.GF_SECURITY_ADMIN_PASSWORD).toBe(password);
    expect(services.grafana.environment?.GF_AUTH_ANONYMOUS_ORG_ROLE).toBe('Viewer');
  });

  it('has every service, images pinned by version, healthchecks and healthy-dependency conditions', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['agent-1', 'agent-2', 'agent-3', 'alertmanager', 'grafana', 'k6', 'mock-provider', 'prometheus', 'redis'].sort(),
    );
    for (const [name, service] of Object.entries(services)) {
      const tag = service.image?.split(':')[1];
      expect(tag, `${name} image`).toMatch(/^v?\d+\.\d+\.\d+/);
      if (name !== 'k6') expect(service.healthcheck?.test, `${name} healthcheck`).toBeDefined();
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(Object.keys(services), `${name} depends on`).toContain(dependency);
        expect(condition, `${name} → ${dependency}`).toBe('service_healthy');
        expect(services[dependency].healthcheck, `${dependency} healthcheck`).toBeDefined();
      }
      for (const port of service.ports ?? []) expect(port, `${name} port`).toMatch(/^127\.0\.0\.1:/);
    }
    expect(services['mock-provider'].build?.context).toBe(repo.replace(/\/$/, ''));
    expect(services.k6.profiles).toEqual(['load']);
  });

  it('mounts only files and folders that exist in the repository', async () => {
    const sources = Object.values(services)
      .flatMap((s) => s.volumes ?? [])
      .map((volume) => volume.split(':')[0])
      .filter((source) => source.startsWith('/'));
    expect(sources.length).toBeGreaterThanOrEqual(6);
    for (const source of sources) {
      expect(source.startsWith(repo), source).toBe(true);
      await expect(stat(source), source).resolves.toBeDefined();
    }
    const grafanaMounts = services.grafana.volumes?.join('\n') ?? '';
    expect(grafanaMounts).toContain('dashboards/generated/grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(grafanaMounts).toContain('dashboards/generated/grafana/dashboards:/var/lib/grafana/dashboards:ro');
  });

  it('exposes admission, the request deadline and quota sharing to the agent replicas, as the agent\'s own CLI reads them', async () => {
    const defaults = parseCliConfig([], containerEnv(services['agent-1']));
    if (defaults === 'help') throw new Error('unexpected --help');
    expect(defaults.service).toMatchObject({ admission: 'request', quotaSharing: 'static' });
    expect(defaults.service.requestDeadlineMs).toBeUndefined(); // unset: the service's own default
    const set = await composedServices({ QUOTASCOPE_AGENT_ADMISSION: 'call', QUOTASCOPE_AGENT_REQUEST_DEADLINE_MS: '90000', QUOTASCOPE_AGENT_QUOTA_SHARING: 'central' });
    for (const name of ['agent-1', 'agent-2', 'agent-3']) {
      const parsed = parseCliConfig([], containerEnv(set[name]));
      if (parsed === 'help') throw new Error('unexpected --help');
      expect(parsed.service, name).toMatchObject({ admission: 'call', requestDeadlineMs: 90_000, quotaSharing: 'central', redisUrl: 'redis://redis:6379' });
      expect(set[name].depends_on?.redis?.condition, name).toBe('service_healthy');
    }
  });

  it('still passes the three settings on under their former shell names (AGENT_*), which the agent reads as aliases', async () => {
    const set = await composedServices({ AGENT_ADMISSION: 'call', AGENT_REQUEST_DEADLINE_MS: '90000', AGENT_QUOTA_SHARING: 'central' });
    const parsed = parseCliConfig([], containerEnv(set['agent-1']));
    if (parsed === 'help') throw new Error('unexpected --help');
    expect(parsed.service).toMatchObject({ admission: 'call', requestDeadlineMs: 90_000, quotaSharing: 'central' });
  });

  it('gives the 3 agent replicas the planner\'s static quota shares of the worked example', () => {
    const p = plan(reviewAgentExample);
    const agents = Object.entries(services).filter(([name]) => name.startsWith('agent-'));
    expect(agents).toHaveLength(p.fleet.replicas);
    let shares = 0;
    for (const [name, agent] of agents) {
      const env = agent.environment ?? {};
      const share = Number(env.QUOTASCOPE_AGENT_REPLICA_SHARE);
      shares += share;
      expect(Number(env.QUOTASCOPE_AGENT_PERMITS), name).toBe(p.perReplica.permits);
      expect(Number(env.QUOTASCOPE_AGENT_TOKENS_PER_MINUTE), name).toBe(p.budget.fleetTokensPerMinute);
      expect(Number(env.QUOTASCOPE_AGENT_TOKENS_PER_MINUTE) * share, name).toBeCloseTo(p.perReplica.tokensPerMinute, -1);
      expect(Number(env.QUOTASCOPE_AGENT_MAX_WAIT_MS), name).toBe(p.perReplica.maxWaitSeconds * 1000);
      expect(env.QUOTASCOPE_AGENT_PROVIDER_URL, name).toBe('http://mock-provider:8090');
    }
    expect(shares).toBeCloseTo(1, 6);
    const mockCommand = services['mock-provider'].command?.join(' ') ?? '';
    expect(mockCommand).toContain(`--tokens-per-minute=${reviewAgentExample.quotaTokensPerMinute}`);
    expect(mockCommand).toContain(`--requests-per-minute=${reviewAgentExample.quotaRequestsPerMinute}`);
  });

  it('runs a k6 scenario from loadtest/ with remote write to Prometheus', async () => {
    const k6 = services.k6;
    const script = k6.command?.at(-1) ?? '';
    expect(k6.command).toContain('experimental-prometheus-rw');
    const mount = (k6.volumes ?? []).map((v) => v.split(':')).find(([, target]) => script.startsWith(`${target}/`));
    expect(mount, 'the script is inside a mounted folder').toBeDefined();
    const [source, target] = mount ?? ['', ''];
    await expect(stat(join(source, script.slice(target.length)))).resolves.toBeDefined();
    expect(script.endsWith('loadtest/k6/run.ts')).toBe(true);
    const scenario = k6.environment?.SCENARIO_FILE ?? '';
    expect(scenario).toBe(`${target}/scenarios/burst.json`);
    await expect(stat(join(source, scenario.slice(target.length)))).resolves.toBeDefined();
    expect(k6.environment?.K6_PROMETHEUS_RW_SERVER_URL).toBe('http://prometheus:9090/api/v1/write');
    expect(k6.environment?.K6_PROMETHEUS_RW_TREND_STATS).toBe('p(50),p(95),p(99),avg,max,count');
    expect(k6.environment?.K6_NO_USAGE_REPORT).toBe('true');
    expect(k6.environment?.TARGET?.split(',')).toEqual(['agent-1', 'agent-2', 'agent-3'].map((a) => `http://${a}:8080`));
    expect(services.prometheus.command).toContain('--web.enable-remote-write-receiver');
  });
});

describe('compose-only configs under deploy/', () => {
  it('Prometheus config is valid, loads the generated rules and scrapes the contract jobs', async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'quotascope-prom-'));
    try {
      // The same layout as inside the container: the config and rules/ next to it.
      await cp(join(repo, 'deploy/prometheus/prometheus.yml'), join(scratch, 'prometheus.yml'));
      await cp(join(repo, 'dashboards/generated/prometheus'), join(scratch, 'rules'), { recursive: true });
      const { stdout } = await run(requireTool('promtool'), ['check', 'config', join(scratch, 'prometheus.yml')]);
      expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    const config = parseYaml(await readFile(join(repo, 'deploy/prometheus/prometheus.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const targets = Object.fromEntries(config.scrape_configs.map((c) => [c.job_name, c.static_configs[0].targets]));
    const agentPort = services['agent-1'].environment?.QUOTASCOPE_AGENT_PORT;
    expect(targets[jobs.agent]).toEqual(['agent-1', 'agent-2', 'agent-3'].map((a) => `${a}:${agentPort}`));
    expect(targets[jobs.mockProvider]).toEqual(['mock-provider:8090']);
    const mounts = services.prometheus.volumes?.join('\n') ?? '';
    expect(mounts).toContain('/deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    expect(mounts).toContain('/dashboards/generated/prometheus:/etc/prometheus/rules:ro');
  });

  it('Alertmanager config is valid', async () => {
    // amtool ships in the same Debian package as Alertmanager (prometheus-alertmanager).
    const amtool = requireTool('amtool');
    expect(() => accessSync(amtool, constants.X_OK), `${amtool} missing: run npm run tools`).not.toThrow();
    const { stdout } = await run(amtool, ['check-config', join(repo, 'deploy/alertmanager/alertmanager.yml')]);
    expect(stdout).toContain('SUCCESS');
  });
});

// Starts a compose service's command as a local process and returns the URL it listens on.
async function startService(command: string[], env: NodeJS.ProcessEnv, cwd: string, started: ChildProcess[]) {
  const [program, ...args] = command;
  expect(program).toBe('node');
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" from ${args[0]}:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[\d.:]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${args[0]} exited with ${code}:\n${output}`)));
  });
}

async function stopAll(started: ChildProcess[]): Promise<void> {
  await Promise.all(
    started.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** A compose command with the container's listen address and port swapped for loopback and port 0. */
function onLoopback(command: readonly string[]): string[] {
  return command.map((arg) => (arg.startsWith('--host=') ? '--host=127.0.0.1' : arg.startsWith('--port=') ? '--port=0' : arg));
}

describe('the services as compose configures them', () => {
  it('the mock provider command and an agent replica environment start and serve the 300 k share', async () => {
    const started: ChildProcess[] = [];
    try {
      const mockCommand = services['mock-provider'].command ?? [];
      const mockUrl = await startService(onLoopback(mockCommand), process.env, repo, started);
      expect((await fetch(`${mockUrl}/healthz`)).ok).toBe(true);
      const agentEnv = {
        ...process.env,
        ...containerEnv(services['agent-1']),
        QUOTASCOPE_AGENT_HOST: '127.0.0.1',
        QUOTASCOPE_AGENT_PORT: '0',
        QUOTASCOPE_AGENT_PROVIDER_URL: mockUrl,
      };
      const agentUrl = await startService(services['agent-1'].command ?? [], agentEnv, repo, started);
      expect((await fetch(`${agentUrl}/healthz`)).ok).toBe(true);
      const metrics = await (await fetch(`${agentUrl}/metrics`)).text();
      const capacity = samplesOf(metrics, limiterMetrics.budgetCapacity.name, { limiter: 'gemini' });
      expect(capacity, 'budget capacity gauge').toHaveLength(1);
      expect(capacity[0].value).toBeCloseTo(plan(reviewAgentExample).perReplica.tokensPerMinute, -1);
    } finally {
      await stopAll(started);
    }
  });
});

describe('Dockerfile', () => {
  let dockerfile: string[];
  let scratch: string;

  beforeAll(async () => {
    dockerfile = (await readFile(join(repo, 'Dockerfile'), 'utf8'))
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    scratch = await mkdtemp(join(tmpdir(), 'quotascope-image-'));
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('starts from a pinned Node 24 slim image and runs as a non-root user', () => {
    expect(dockerfile[0]).toMatch(/^FROM node:24\.\d+\.\d+-slim$/);
    const user = dockerfile.filter((line) => line.startsWith('USER ')).at(-1);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/USER (root|0)$/);
  });

  it(
    'its build steps work in a scratch copy, and the services load with production dependencies only',
    async () => {
      // COPY steps copy from the repository; the RUN step is `npm ci` with --offline added so
      // it installs from the local npm cache (this machine has no network). Its trailing
      // `npm cache clean --force` is left out here: it would wipe this machine's cache.
      let installs = 0;
      for (const line of dockerfile) {
        const copy = /^COPY (\S+(?: \S+)*) (\S+)$/.exec(line);
        if (copy) {
          const sources = copy[1].split(' ');
          const target = join(scratch, copy[2]);
          for (const source of sources) {
            const into = copy[2].endsWith('/') ? join(target, source) : target;
            await mkdir(dirname(into), { recursive: true });
            await cp(join(repo, source), into, { recursive: true });
          }
        }
        const install = /^RUN (npm ci [^&]*)/.exec(line);
        if (install) {
          const args = install[1].trim().split(/\s+/).slice(1);
          expect(args).toContain('--omit=dev');
          await run('npm', [...args, '--offline', '--loglevel=error'], { cwd: scratch, env: process.env });
          installs++;
        }
      }
      expect(installs).toBe(1);
      await expect(stat(join(scratch, 'node_modules/@google/adk'))).resolves.toBeDefined();
      await expect(stat(join(scratch, 'node_modules/vitest'))).rejects.toThrow();
      const cmd = JSON.parse(dockerfile.find((line) => line.startsWith('CMD '))?.slice(4) ?? '[]') as string[];
      expect(cmd).toEqual(['node', 'cli/quotascope.ts', 'agent']);
      // Every static import of each service resolves inside the image's tree.
      for (const entry of [cmd.slice(1, 3), services['mock-provider'].command?.slice(1, 3) ?? []]) {
        const { stdout } = await run(process.execPath, [...entry, '--help'], { cwd: scratch, env: { PATH: process.env.PATH } });
        expect(stdout, entry.join(' ')).toMatch(/--port/);
      }
    },
    240_000,
  );
});
