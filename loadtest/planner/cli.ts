// `npm run plan -- …`: prints the capacity plan as a table, or as JSON with --json.
// Bad flags print one line naming the flag and exit with code 2.
import { FlagError, parseArgs, usage } from './flags.ts';
import { formatPlan } from './format.ts';
import { plan } from './plan.ts';

function main(argv: readonly string[]): number {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`plan: ${error.message}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  const result = plan(args.input);
  process.stdout.write(args.json ? `${JSON.stringify(result, null, 2)}\n` : formatPlan(result));
  return 0;
}

const argv = process.argv.slice(2);
// `--agent FILE` counts the tree from the module (agent-plan.ts); the rest is the planner alone.
process.exitCode = argv.some((arg) => arg === '--agent' || arg.startsWith('--agent='))
  ? await (await import('./agent-plan.ts')).main(argv)
  : main(argv);
