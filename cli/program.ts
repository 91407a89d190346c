// The `quotascope` program: one commander root with every subcommand (run-command.ts turns
// what a command threw into one line and an exit code). Command modules import only their
// flag definitions up front; each action loads what it runs when it runs.
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { agentCommand } from './agent.ts';
import { convertTraceCommand } from './convert-trace.ts';
import { dashboardsCommand } from './dashboards.ts';
import { EXIT_USAGE } from './errors.ts';
import { loadtestCommand } from './loadtest.ts';
import { mockProviderCommand } from './mock-provider.ts';
import { planCommand } from './plan.ts';
import { runCommand, standardHelp } from './run-command.ts';
import { serveCommand } from './serve.ts';
import { startCommand } from './start.ts';
import { sweepCommand } from './sweep.ts';
import { toolsCommand } from './tools.ts';

/** A command implemented as `main(argv) → exit code` (it parses its own flags). */
export interface MainCommand {
  readonly name: string;
  readonly description: string;
  /** Loaded only when the command runs. */
  readonly load: () => Promise<(argv: string[]) => Promise<number> | number>;
}

/** The package's own version, read from the package.json above this file (source or dist). */
function packageVersion(): string {
  for (const up of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'quotascope' && pkg.version) return pkg.version;
    } catch {
      // not this one
    }
  }
  return 'unknown';
}

/** Wraps a main(argv) function as a subcommand that hands it every argument after its name. */
export function mainCommand(spec: MainCommand): Command {
  return new Command(spec.name)
    .description(spec.description)
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async (_args: string[], _options: unknown, command: Command) => {
      const main = await spec.load();
      process.exitCode = await main(command.args);
    });
}

/** Commands that parse their own argv, mounted as they land: `{ name, description, load: async () => (await import('…')).main }`. */
export const MAIN_COMMANDS: readonly MainCommand[] = [
  {
    name: 'report',
    description: "the report page of a run (reports/<run-id>/index.html) from the Prometheus that scraped it; `report --help` lists its flags",
    load: async () => (await import('./report.ts')).main,
  },
];

export function buildProgram(extra: readonly MainCommand[] = MAIN_COMMANDS): Command {
  const program = new Command('quotascope')
    .description('Load-test ADK agent trees against a rate-limited provider quota, and size the limiter that keeps them under it.')
    .version(packageVersion(), '-V, --version')
    .showSuggestionAfterError(true);
  for (const command of [
    startCommand(),
    sweepCommand(),
    serveCommand(),
    agentCommand(),
    mockProviderCommand(),
    loadtestCommand(),
    planCommand(),
    dashboardsCommand(),
    convertTraceCommand(),
    toolsCommand(),
  ]) {
    program.addCommand(command);
  }
  standardHelp(program);
  for (const spec of extra) program.addCommand(mainCommand(spec));
  return program;
}

/** Runs one command line; resolves to the exit code (a server keeps running after it resolves). */
export async function runCli(argv: readonly string[], program: Command = buildProgram()): Promise<number> {
  if (argv.length === 0) {
    process.stderr.write(program.helpInformation());
    return EXIT_USAGE;
  }
  // `loadtest … --k8s` renders or evaluates a k6-operator run, with flags of its own.
  if (argv[0] === 'loadtest' && argv.includes('--k8s')) return (await import('./k8s-loadtest.ts')).k8sLoadtestCommand(argv.slice(1));
  const name = program.commands.some((c) => c.name() === argv[0]) ? argv[0] : program.name();
  return runCommand(program, argv, name);
}
