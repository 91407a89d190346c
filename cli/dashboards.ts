// `quotascope dashboards`: writes the dashboards, alert rules and their Grafana, Prometheus
// and Kubernetes shapes. No flags: quotascope's own stack (dashboards/generated/ and the
// Helm chart's files); --config FILE --out DIR: a user's stack from a YAML or JSON config;
// --check writes nothing and exits 1 naming every file that differs (npm test runs it).
import { Command } from 'commander';
import { z } from 'zod';
import { UsageError } from './errors.ts';
import { FlagSet } from './flags.ts';

const FLAGS = {
  config: { flag: 'config', value: 'file', help: "a user's stack: selectors, datasource, thresholds (YAML or JSON, dashboards/config.ts); needs --out", schema: z.string().min(1).optional(), defaultText: "quotascope's own stack" },
  out: {
    flag: 'out',
    value: 'dir',
    help: 'folder to write the generated files into (files of your own there are left as they are) or to check',
    schema: z.string().min(1).optional(),
    defaultText: 'dashboards/generated and the Helm chart files',
  },
} as const;

export function dashboardsCommand(): Command {
  const command = new Command('dashboards')
    .description('generate the Grafana dashboards, alert rules and their promtool tests')
    .option('--check', 'write nothing; exit 1 naming every file that is stale, missing or extra');
  const flags = new FlagSet(command, FLAGS, { formerEnvPrefix: 'DASHBOARDS_' });
  command.action(async (options: { check?: boolean }) => {
    const { config, out } = flags.values() as { config?: string; out?: string };
    if (config !== undefined && out === undefined) throw new UsageError(`${flags.nameOf('config')} needs --out DIR (dashboards/generated/ holds the defaults)`);
    const [{ runDashboards }, { DashboardsConfigError }] = await Promise.all([import('../dashboards/generate.ts'), import('../dashboards/config.ts')]);
    try {
      process.exitCode = runDashboards({ config, out, check: options.check === true });
    } catch (error) {
      if (error instanceof DashboardsConfigError) throw new UsageError(`${flags.nameOf('config')}: ${error.message}`);
      throw error;
    }
  });
  return command;
}
