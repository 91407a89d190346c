// How the `quotascope` bin reports a failure: one line and an exit code, never a stack.
// Exit 2: the command line is wrong (unknown flag, bad value). Exit 1: the command could
// not do its job (port in use, tool missing, provider unreachable, anything unexpected).
import { CommanderError } from 'commander';

/** A bad command line; the message names the flag, variable or argument. Exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

interface SystemError extends Error {
  code?: string;
  address?: string;
  port?: number;
  syscall?: string;
}

const hostPort = (e: SystemError) => (e.address !== undefined && e.port !== undefined ? `${e.address}:${e.port}` : (e.address ?? ''));

/** Node's socket errors in words (listen and connect failures are the usual start-up failures). */
function systemErrorLine(e: SystemError): string | undefined {
  switch (e.code) {
    case 'EADDRINUSE':
      return `cannot listen on ${hostPort(e)}: the port is in use (pick another with --port)`;
    case 'EACCES':
      return e.syscall === 'listen' ? `cannot listen on ${hostPort(e)}: permission denied (ports below 1024 need privileges)` : undefined;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${hostPort(e)}: the address is not one of this machine's`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve host ${(e as { hostname?: string }).hostname ?? e.address ?? ''}`;
    case 'ECONNREFUSED':
      return `cannot reach ${hostPort(e)}: connection refused (is it running?)`;
    case 'ERR_SOCKET_BAD_PORT':
      return `invalid port: ${e.message.replace(/^options\.port should be/, 'a port must be')}`;
    default:
      return undefined;
  }
}

/** `fetch failed` says nothing; its cause names the host and the reason (unless the message already says it). */
function causeLine(error: Error): string | undefined {
  const cause = (error as { cause?: unknown }).cause;
  if (!(cause instanceof Error)) return undefined;
  const reason = firstLine(cause.message);
  return systemErrorLine(cause as SystemError) ?? (error.message.includes(reason) ? firstLine(error.message) : `${error.message}: ${reason}`);
}

const firstLine = (text: string) => text.split('\n').find((line) => line.trim() !== '') ?? text;

/** The flag a commander message is about: "unknown option '--colour'" → --colour. */
function commanderFlag(message: string): string | undefined {
  return /'(-[^' ]+)/.exec(message)?.[1];
}

function commanderLine(error: CommanderError): string {
  const message = error.message.replace(/^error: /, '');
  const flag = commanderFlag(message);
  switch (error.code) {
    case 'commander.unknownOption': {
      const suggestion = /Did you mean (\S+)\?/.exec(message)?.[1];
      return `${flag}: unknown flag (${suggestion ? `did you mean ${suggestion}?` : 'see --help'})`;
    }
    case 'commander.optionMissingArgument':
      return `${flag}: missing value`;
    default:
      return firstLine(message);
  }
}

/**
 * node:util parseArgs' flag errors in one line: its "argument is ambiguous" (a value that
 * starts with a dash, as `--title -1`) spans three.
 */
function parseArgsLine(error: Error): string | undefined {
  const code = (error as SystemError).code;
  if (code === undefined || !code.startsWith('ERR_PARSE_ARGS_')) return undefined;
  const ambiguous = /^Option '(?:-\w, )?(--[\w-]+)[^']*' argument is ambiguous/.exec(error.message);
  if (ambiguous) return `${ambiguous[1]}: missing value, or a value starting with "-" (give that as ${ambiguous[1]}=VALUE)`;
  return firstLine(error.message);
}

/** One line and the exit code for anything a command threw. */
export function describeFailure(error: unknown): { line: string; exitCode: number } {
  if (error instanceof UsageError) return { line: firstLine(error.message), exitCode: EXIT_USAGE };
  const parseArgsProblem = error instanceof Error ? parseArgsLine(error) : undefined;
  if (parseArgsProblem !== undefined) return { line: parseArgsProblem, exitCode: EXIT_USAGE };
  if (error instanceof CommanderError) return { line: commanderLine(error), exitCode: error.exitCode === 0 ? 0 : EXIT_USAGE };
  if (error instanceof Error) {
    const line = systemErrorLine(error as SystemError) ?? causeLine(error) ?? firstLine(error.message);
    return { line, exitCode: EXIT_FAILURE };
  }
  return { line: String(error), exitCode: EXIT_FAILURE };
}

/** Prints `<command>: <line>` to stderr (the stack too when QUOTASCOPE_DEBUG is set); returns the exit code. */
export function reportFailure(command: string, error: unknown): number {
  const { line, exitCode } = describeFailure(error);
  process.stderr.write(`${command}: ${line}\n`);
  if (process.env.QUOTASCOPE_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  return exitCode;
}

/**
 * Runs `fn` with everything written to stdout sent to stderr instead (a module's own ADK copy
 * logs its WARN lines to stdout), so a command's result is alone on stdout.
 */
export async function withStdoutOnStderr<T>(fn: () => Promise<T>): Promise<T> {
  const write = process.stdout.write;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  try {
    return await fn();
  } finally {
    process.stdout.write = write;
  }
}
