// Under npm (`npm run …`, `npx quotascope …`) the npm process owns the command's lifetime.
// npm passes SIGTERM/SIGINT on to its child, but `npx` runs a bin through `sh -c`, and the
// shell dies of the signal without passing it on, leaving the server orphaned and listening.
// So under npm, a command whose parent goes away stops the way a SIGTERM stops it.
// (The npm scripts `exec` the bin, so there npm's signal reaches node directly.)

const CHECK_EVERY_MS = 200;

export function stopWhenOrphaned(env: NodeJS.ProcessEnv = process.env): void {
  if (!env.npm_command) return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }, CHECK_EVERY_MS);
  timer.unref();
}
