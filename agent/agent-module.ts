// A user's agent module, `FILE[#export]`: a TS or JS file exporting an ADK root agent (a
// BaseAgent or a Workflow), imported by absolute file URL (Node strips the types of .ts).
// The default export name is `rootAgent`, as in ADK's own loader. Every way it can be wrong
// is an AgentModuleError whose one-line message names the file or the export.
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RunnableRoot } from '@google/adk';
import { isRunnableRoot } from '../instrumentation/tree/adk-brands.ts';

export const DEFAULT_AGENT_EXPORT = 'rootAgent';

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

/** Imports the module and returns its root agent; rejects with an AgentModuleError. */
export async function loadAgentModule(spec: string, cwd?: string): Promise<LoadedAgentModule> {
  const { file, exportName } = parseAgentModuleSpec(spec, cwd);
  if (!existsSync(file) || !statSync(file).isFile()) throw new AgentModuleError(`agent module ${file}: no such file`);
  if (!MODULE_EXTENSIONS.includes(extname(file))) {
    throw new AgentModuleError(`agent module ${file}: not a JS or TS module (${MODULE_EXTENSIONS.join(', ')})`);
  }
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    const message = (error as Error)?.message ?? String(error);
    throw new AgentModuleError(`agent module ${file}: import failed: ${message.split('\n')[0]}`);
  }
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
