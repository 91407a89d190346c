// Runs one commander command line and turns whatever it threw into one line and an exit
// code (the one error formatter of every quotascope command).
import type { Command, Option } from 'commander';
import { reportFailure } from './errors.ts';

/** A flag's help line: its text, then its default and env variable. */
function optionDescription(option: Option): string {
  const notes: string[] = [];
  const shown = option.defaultValueDescription ?? (option.defaultValue === undefined ? undefined : JSON.stringify(option.defaultValue));
  if (shown !== undefined) notes.push(`default ${shown}`);
  if (option.envVar) notes.push(`env ${option.envVar}`);
  return notes.length > 0 ? `${option.description} (${notes.join('; ')})` : option.description;
}

/** The help of every quotascope command: `--help` (then `-h`), and each flag's default and env variable. */
export function standardHelp(command: Command): Command {
  command.helpOption('--help, -h', 'show this help').configureHelp({ optionDescription });
  for (const sub of command.commands) standardHelp(sub);
  return command;
}

/** Errors are thrown (not printed, not exited on), so runCommand reports them in one place. */
export function quiet(command: Command): Command {
  command.exitOverride().configureOutput({ outputError: () => {} });
  for (const sub of command.commands) quiet(sub);
  return command;
}

/** Parses argv and runs the action; resolves to the exit code (a server keeps running after it resolves). */
export async function runCommand(command: Command, argv: readonly string[], name = command.name()): Promise<number> {
  try {
    await quiet(command).parseAsync([...argv], { from: 'user' });
    return Number(process.exitCode ?? 0);
  } catch (error) {
    if (error instanceof Error && 'exitCode' in error && error.exitCode === 0) return 0; // --help, --version
    return reportFailure(name, error);
  }
}
