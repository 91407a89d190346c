// The Node version check, imported first by the bin: on an older Node quotascope fails in
// ways that do not name the cause ("Unknown file extension .ts", a missing API), so it says
// what it needs in one line, exit 1. The minimum is package.json's engines field.

/** The oldest Node quotascope runs on (package.json "engines"). */
export const MINIMUM_NODE = '22.12.0';

/** Whether `version` (x.y.z) is at least `minimum`. */
export function isAtLeast(version: string, minimum: string): boolean {
  const a = version.replace(/^v/, '').split('.').map(Number);
  const b = minimum.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** The one line for a Node that is too old, or undefined. */
export function nodeVersionProblem(version: string = process.versions.node): string | undefined {
  return isAtLeast(version, MINIMUM_NODE) ? undefined : `quotascope needs Node >= ${MINIMUM_NODE}; this is Node ${version} (install a current LTS, e.g. with nvm install 24)`;
}

const problem = nodeVersionProblem();
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
