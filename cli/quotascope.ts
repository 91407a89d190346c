#!/usr/bin/env node
// `quotascope <command>`: the one bin. `quotascope --help` lists the commands.
import { reportFailure } from './errors.ts';
import { stopWhenOrphaned } from './follow-npm.ts';
import { runCli } from './program.ts';

/** How long a failed command's open handles may take to close on their own, ms. */
const FAILED_EXIT_GRACE_MS = 2_000;

const command = process.argv[2] && !process.argv[2].startsWith('-') ? process.argv[2] : 'quotascope';
// A failure after start-up (a server's socket error, a rejected promise) is one line too.
process.on('uncaughtException', (error) => process.exit(reportFailure(command, error)));
process.on('unhandledRejection', (error) => process.exit(reportFailure(command, error)));
stopWhenOrphaned();
const code = await runCli(process.argv.slice(2));
process.exitCode = code;
// A failed command leaves nothing running: what still holds the process a moment later (a
// timer a user's module started at import) does not keep it alive. Logs flush first.
if (code !== 0) setTimeout(() => process.exit(code), FAILED_EXIT_GRACE_MS).unref();
