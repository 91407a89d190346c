// A user's agent module, `FILE[#export]`: a TS or JS file exporting an ADK root agent (a
// BaseAgent or a Workflow), imported by absolute file URL (Node strips the types of .ts).
// The default export name is `rootAgent`, as in ADK's own loader. Every way it can be wrong
// is an AgentModuleError whose one-line message names the file or the export: a throw at
// import, a stack overflow, process.exit() at import, an import that outlasts its deadline
// (a top-level await that never settles).
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RunnableRoot } from '@google/adk';
import { isRunnableRoot } from '../instrumentation/tree/adk-brands.ts';

export const DEFAULT_AGENT_EXPORT = 'rootAgent';
/** How long importing the module may take by default, ms (ADK itself is imported before it). */
export const DEFAULT_IMPORT_TIMEOUT_MS = 60_000;
export const MAX_IMPORT_TIMEOUT_MS = 600_000;

const MODULE_EXTENSIONS = ['.ts', '.mts', '.js', '.mjs', '.cjs', '.cts'];

export class AgentModuleError extends Error {
  override name = 'AgentModuleError';
}

export interface AgentModuleSpec {
  /** Absolute path of the module. */
  readonly file: string;
  readonly exportName: string;
}

export interface LoadedAgentModule extends AgentModuleSpec {
  readonly root: RunnableRoot;
  /**
   * The app name ADK's loader would give it: the file name without its extension, or the
   * folder's name for `<app>/agent.ts`.
   */
  readonly appName: string;
}

/** Splits `FILE[#export]`; the file is resolved against `cwd`. */
export function parseAgentModuleSpec(spec: string, cwd: string = process.cwd()): AgentModuleSpec {
  const hash = spec.lastIndexOf('#');
  const path = hash >= 0 ? spec.slice(0, hash) : spec;
  const exportName = hash >= 0 ? spec.slice(hash + 1) : DEFAULT_AGENT_EXPORT;
  if (path.trim() === '') throw new AgentModuleError(`agent module "${spec}": no file given (FILE[#export])`);
  if (!/^[A-Za-z_$][\w$]*$/.test(exportName)) {
    throw new AgentModuleError(`agent module "${spec}": "${exportName}" is not an export name`);
  }
  return { file: resolve(cwd, path), exportName };
}

/** The app name of a module file (`agents/review/agent.ts` → review, `my_agent.ts` → my_agent). */
export function appNameOf(file: string): string {
  const stem = basename(file, extname(file));
  return stem === 'agent' || stem === 'index' ? basename(dirname(file)) : stem;
}

/**
 * Imports `file` within `timeoutMs`. process.exit() called while it is imported throws there
 * instead of ending the process; the pending deadline keeps the event loop alive, so a
 * top-level await that never settles ends in this error rather than in Node's exit 13.
 */
async function importModule(file: string, timeoutMs: number): Promise<Record<string, unknown>> {
  const fail = (what: string) => new AgentModuleError(`agent module ${file}: ${what}`);
  const exit = process.exit;
  let exitCode: string | number | null | undefined;
  let exited = false;
  process.exit = ((code?: string | number | null) => {
    exited = true;
    exitCode = code ?? process.exitCode ?? 0;
    throw fail(`called process.exit(${exitCode}) while being imported`);
  }) as typeof process.exit;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(fail(`import did not finish within ${timeoutMs} ms (a top-level await that never settles?); raise --import-timeout-ms if it is only slow`)),
      timeoutMs,
    );
  });
  try {
    const imported = import(pathToFileURL(file).href) as Promise<Record<string, unknown>>;
    imported.catch(() => {}); // after the deadline nobody awaits it
    const exports = await Promise.race([imported, deadline]);
    if (exited) throw fail(`called process.exit(${exitCode}) while being imported`);
    return exports;
  } catch (error) {
    if (exited) throw fail(`called process.exit(${exitCode}) while being imported`);
    if (error instanceof AgentModuleError) throw error;
    const message = (error as Error)?.message ?? String(error);
    throw fail(`import failed: ${message.split('\n')[0]}`);
  } finally {
    clearTimeout(timer);
    process.exit = exit;
  }
}

/** Imports the module (within `timeoutMs`) and returns its root agent; rejects with an AgentModuleError. */
export async function loadAgentModule(spec: string, cwd?: string, timeoutMs: number = DEFAULT_IMPORT_TIMEOUT_MS): Promise<LoadedAgentModule> {
  const { file, exportName } = parseAgentModuleSpec(spec, cwd);
  if (!existsSync(file) || !statSync(file).isFile()) throw new AgentModuleError(`agent module ${file}: no such file`);
  if (!MODULE_EXTENSIONS.includes(extname(file))) {
    throw new AgentModuleError(`agent module ${file}: not a JS or TS module (${MODULE_EXTENSIONS.join(', ')})`);
  }
  const exports = await importModule(file, timeoutMs);
  if (!Object.hasOwn(exports, exportName)) {
    const agents = Object.keys(exports).filter((key) => isRunnableRoot(exports[key]));
    const known = agents.length > 0 ? `; agent exports: ${agents.join(', ')}` : '; it exports no agent';
    throw new AgentModuleError(`agent module ${file}: no export "${exportName}"${known}`);
  }
  const root = exports[exportName];
  if (!isRunnableRoot(root)) {
    const kind = root === null ? 'null' : typeof root === 'object' ? `an object (${root.constructor?.name ?? 'no class'})` : `a ${typeof root}`;
    throw new AgentModuleError(`agent module ${file}: export "${exportName}" is ${kind}, not an ADK agent (BaseAgent or Workflow)`);
  }
  return { file, exportName, root, appName: appNameOf(file) };
}
