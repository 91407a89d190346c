// A dashboards config cannot break or inject into the generated rules (issue 23, row 6):
// label values and runbook URLs are literals (template syntax and $ refused, naming the
// field), selectors are PromQL label matchers written back in one canonical form, and over
// fuzzed configs every accepted one gives rules the real `promtool check rules` accepts.
// `dashboards --out` leaves the folder as it was when writing fails.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DashboardsConfigError, type DashboardsConfigInput, parseDashboardsConfig } from '../../dashboards/config.ts';
import { generatedFiles, generatedPaths } from '../../dashboards/files.ts';
import { generatedDir } from '../../dashboards/generate.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';

const exec = promisify(execFile);
const promtool = requireTool('promtool');
const bin = join(generatedDir, '..', '..', 'cli', 'quotascope.ts');
const scratch = mkdtempSync(join(tmpdir(), 'qs-injection-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function run(file: string, args: string[], cwd?: string): Promise<{ code: number; output: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(file, args, { cwd });
    return { code: 0, output: stdout + stderr, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr, stderr: e.stderr };
  }
}

let checked = 0;
/** `promtool check rules` on the rules generated for `config`. */
async function checkRules(config: ReturnType<typeof parseDashboardsConfig>): Promise<{ code: number; output: string }> {
  const file = join(scratch, `rules-${checked++}.yml`);
  writeFileSync(file, generatedFiles(config).get(generatedPaths.rules) as string);
  return run(promtool, ['check', 'rules', file]);
}

const refusal = (input: DashboardsConfigInput): string => {
  try {
    parseDashboardsConfig(input);
  } catch (error) {
    if (error instanceof DashboardsConfigError) return error.message;
    throw error;
  }
  throw new Error('accepted');
};

describe('dashboards config: what the red team sent', () => {
  it('template syntax in a label value or the runbook base is refused, naming the field', () => {
    expect(refusal({ alerts: { labels: { team: '{{ $value' } } })).toMatch(/^alerts\.labels\.team: template syntax/);
    expect(refusal({ alerts: { labels: { team: '{{ printf "%s" (query "up") }}' } } })).toMatch(/^alerts\.labels\.team: template syntax/);
    expect(refusal({ alerts: { runbookUrlBase: 'https://wiki.example/{{ template "x" }}' } })).toMatch(/^alerts\.runbookUrlBase: template syntax/);
    expect(refusal({ alerts: { labels: { team: '$GF_SECURITY_ADMIN_PASSWORD' } } })).toMatch(/^alerts\.labels\.team: /);
  });

  it('a quoted label name is written back unquoted, and promtool accepts the rules', async () => {
    const config = parseDashboardsConfig({ selectors: { agent: '"job"="x"' } });
    expect(config.selectors.agent).toBe('job="x"');
    expect((await checkRules(config)).code).toBe(0);
  });

  it('a regex no test series can be made for is refused naming the field, not a bare exit 1', async () => {
    expect(refusal({ selectors: { agent: 'job=~"\\\\d+"' } })).toMatch(/^selectors\.agent: cannot guess a value of label job/);
    expect(refusal({ selectors: { agent: 'job=~"\\d+"' } })).toMatch(/^selectors\.agent: unsupported escape/);
    expect(refusal({ selectors: { mockProvider: '"a.b"="x"' } })).toMatch(/^selectors\.mockProvider: label name "a\.b"/);
    const file = join(scratch, 'regex.yaml');
    writeFileSync(file, 'selectors:\n  agent: \'job=~"\\\\d+"\'\n');
    const result = await run(process.execPath, [bin, 'dashboards', '--config', file, '--out', join(scratch, 'regex-out')]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^dashboards: --config: .*regex\.yaml: selectors\.agent: /);
  });
});

/** Text with the pieces that break templates, YAML and PromQL strings mixed in. */
const nasty = fc
  .array(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('{{', '}}', '{{ $value }}', '$', '"', "'", '\\', '\n', '`', '#', ': ', '%q', '\u2028', 'é', '🙂')), { maxLength: 6 })
  .map((parts) => parts.join(''));
const labelName = fc.oneof(fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,8}$/), fc.constantFrom('job', 'namespace', '__name__', 'a.b', '9x'));
const matcher = fc
  .record({
    name: labelName,
    quoted: fc.boolean(),
    op: fc.constantFrom('=', '!=', '=~', '!~'),
    value: fc.oneof(nasty, fc.constantFrom('prod', 'a|b', 'x.*', '.+', '[a-z]+', '(?=x)', '\\d', 'a{2}')),
    raw: fc.boolean(),
  })
  .map(({ name, quoted, op, value, raw }) => `${quoted ? JSON.stringify(name) : name}${op}${raw ? `"${value}"` : JSON.stringify(value)}`);
/** Mostly matcher lists that select something (so many configs are accepted), some anything at all. */
const selectorText = fc.oneof(
  { arbitrary: fc.array(matcher, { maxLength: 3 }).map((m) => ['job="agents"', ...m].join(', ')), weight: 4 },
  { arbitrary: fc.array(matcher, { minLength: 1, maxLength: 3 }).map((m) => m.join(', ')), weight: 1 },
  { arbitrary: nasty, weight: 1 },
);

const fuzzedConfig = fc.record(
  {
    selectors: fc.record({ agent: selectorText, mockProvider: fc.option(selectorText), k6: selectorText }, { requiredKeys: [] }),
    alerts: fc.record(
      {
        labels: fc.dictionary(fc.stringMatching(/^[a-z_]{1,8}$/), fc.oneof(fc.string({ maxLength: 12 }), nasty), { maxKeys: 3 }),
        runbookUrlBase: fc.oneof(fc.webUrl({ withQueryParameters: true, withFragments: true }), nasty),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

describe('dashboards config: fuzzed', () => {
  it('property: a config is refused naming a fuzzed field, or its rules pass promtool check rules', async () => {
    const runs = Number(process.env.FUZZ_RUNS ?? 100);
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(fuzzedConfig, async (input) => {
        let config: ReturnType<typeof parseDashboardsConfig>;
        try {
          config = parseDashboardsConfig(input as DashboardsConfigInput);
        } catch (error) {
          expect(error).toBeInstanceOf(DashboardsConfigError);
          for (const problem of (error as Error).message.split('; ').filter((p) => /^[\w.]+: /.test(p))) {
            expect(problem).toMatch(/^(selectors\.(agent|mockProvider|k6)|alerts\.(labels(\.\w+)?|runbookUrlBase)): /);
          }
          return;
        }
        accepted++;
        const result = await checkRules(config);
        expect(result.code, result.output).toBe(0);
      }),
      { numRuns: runs },
    );
    console.log(`accepted ${accepted} of ${runs}`);
    expect(accepted).toBeGreaterThan(0);
  }, 600_000);
});

describe('dashboards --out: a failure leaves the folder as it was', () => {
  it('writing fails half-way (a folder where a file must go): every file already there is unchanged', async () => {
    const out = join(scratch, 'kept');
    const first = await run(process.execPath, [bin, 'dashboards', '--config', join(generatedDir, '..', 'examples', 'custom-stack.yaml'), '--out', out]);
    expect(first.code, first.output).toBe(0);
    const alerting = readFileSync(join(out, generatedPaths.alerting), 'utf8');
    const rules = readFileSync(join(out, generatedPaths.rules), 'utf8');
    // A later config changes every alert; one of the files it needs cannot be written.
    const config = join(scratch, 'changed.yaml');
    writeFileSync(config, 'alerts:\n  labels:\n    team: changed\n');
    rmSync(join(out, generatedPaths.dashboardConfigMapsDir), { recursive: true, force: true });
    writeFileSync(join(out, generatedPaths.dashboardConfigMapsDir), 'a file where a folder must go');
    const failed = await run(process.execPath, [bin, 'dashboards', '--config', config, '--out', out]);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
    expect(readFileSync(join(out, generatedPaths.alerting), 'utf8')).toBe(alerting);
    expect(readFileSync(join(out, generatedPaths.rules), 'utf8')).toBe(rules);
    // Nothing half-written is left beside them.
    const left = await run('find', [out, '-name', '*.partial']);
    expect(left.output).toBe('');
    rmSync(join(out, generatedPaths.dashboardConfigMapsDir));
    mkdirSync(join(out, generatedPaths.dashboardConfigMapsDir));
    expect((await run(process.execPath, [bin, 'dashboards', '--config', config, '--out', out])).code).toBe(0);
    expect(readFileSync(join(out, generatedPaths.rules), 'utf8')).toContain('team: changed');
  });
});
