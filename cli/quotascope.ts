#!/usr/bin/env node
// `quotascope <command>`: the one bin. `quotascope --help` lists the commands.
import { reportFailure } from './errors.ts';
import { stopWhenOrphaned } from './follow-npm.ts';
import { runCli } from './program.ts';

const command = process.argv[2] && !process.argv[2].startsWith('-') ? process.argv[2] : 'quotascope';
// A failure after start-up (a server's socket error, a rejected promise) is one line too.
process.on('uncaughtException', (error) => process.exit(reportFailure(command, error)));
process.on('unhandledRejection', (error) => process.exit(reportFailure(command, error)));
stopWhenOrphaned();
const code = await runCli(process.argv.slice(2));
// A failed command leaves nothing running (a user's module may have started timers at import).
if (code !== 0) process.exit(code);
