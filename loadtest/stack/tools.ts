// Where the real external tools are: k6 (built by scripts/tools.sh into the quotascope bin
// folder), prometheus, promtool, alertmanager, redis-server and chromium (Debian packages, on PATH).
// `npm run tools` installs them; code that needs one calls requireTool() and gets a clear
// error naming the install command when it is missing.
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

export type ToolName = 'k6' | 'prometheus' | 'promtool' | 'alertmanager' | 'amtool' | 'redis-server' | 'docker-compose' | 'chromium';

const binaryNames: Record<ToolName, readonly string[]> = {
  k6: ['k6'],
  prometheus: ['prometheus'],
  promtool: ['promtool'],
  alertmanager: ['prometheus-alertmanager', 'alertmanager'],
  amtool: ['amtool'],
  'redis-server': ['redis-server'],
  'docker-compose': ['docker-compose'],
  chromium: ['chromium'],
};

export const TOOL_NAMES = Object.keys(binaryNames) as ToolName[];

/** The folder scripts/tools.sh installs k6 into (override with QUOTASCOPE_BIN). */
export function quotascopeBinDir(): string {
  return process.env.QUOTASCOPE_BIN ?? join(homedir(), '.local', 'share', 'quotascope', 'bin');
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The absolute path of a tool, or undefined when it is not installed. */
export function findTool(tool: ToolName): string | undefined {
  const dirs = [quotascopeBinDir(), ...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/sbin', '/usr/local/bin'];
  for (const name of binaryNames[tool]) {
    for (const dir of dirs) {
      if (!dir) continue;
      const candidate = join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

export class ToolMissingError extends Error {
  readonly tool: ToolName;
  constructor(tool: ToolName) {
    super(`${tool} is not installed; run: npm run tools`);
    this.name = 'ToolMissingError';
    this.tool = tool;
  }
}

/** The absolute path of a tool; throws a ToolMissingError naming the install command. */
export function requireTool(tool: ToolName): string {
  const path = findTool(tool);
  if (!path) throw new ToolMissingError(tool);
  return path;
}

/** Environment for every k6 run: no usage report and no extension lookups leave the machine. */
export const K6_ENV = {
  K6_NO_USAGE_REPORT: 'true',
  K6_AUTO_EXTENSION_RESOLUTION: 'false',
} as const;
