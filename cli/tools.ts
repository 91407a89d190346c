// `quotascope tools`: where the external tools are (k6, prometheus, promtool, alertmanager,
// redis-server, docker-compose); `--install` runs the package's scripts/tools.sh for the
// missing ones. Exits 1 naming what is still missing.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';

/** scripts/tools.sh of this package (the build copies it next to the compiled cli/). */
const TOOLS_SCRIPT = fileURLToPath(new URL('../scripts/tools.sh', import.meta.url));

export function toolsCommand(): Command {
  return new Command('tools')
    .description('list the external tools quotascope drives, and install the missing ones')
    .option('--install', 'install missing tools (apt-get as root, k6 with go install)')
    .action(async (options: { install?: boolean }) => {
      const { findTool, TOOL_NAMES } = await import('../loadtest/stack/tools.ts');
      if (options.install) {
        const result = spawnSync('bash', [TOOLS_SCRIPT], { stdio: 'inherit' });
        if (result.error) throw result.error;
        if (result.status !== 0) throw new Error(`${TOOLS_SCRIPT} exited with ${result.status}`);
      }
      const missing: string[] = [];
      for (const tool of TOOL_NAMES) {
        const path = findTool(tool);
        if (!path) missing.push(tool);
        console.log(`${tool.padEnd(15)} ${path ?? 'missing'}`);
      }
      if (missing.length > 0) throw new Error(`missing ${missing.join(', ')}; install with: quotascope tools --install (or npm run tools)`);
    });
}
