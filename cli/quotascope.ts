#!/usr/bin/env node
// `quotascope <command>`: the one bin. `quotascope --help` lists the commands.
// The Node check comes first: imports run in order, before anything that needs a newer Node.
import './node-version.ts';
import { reportFailure } from './errors.ts';
import { stopWhenOrphaned } from './follow-npm.ts';
import { runCli } from './program.ts';

const command = process.argv[2] && !process.argv[2].startsWith('-') ? process.argv[2] : 'quotascope';
// A failure after start-up (a server's socket error, a rejected promise) is one line too.
process.on('uncaughtException', (error) => process.exit(reportFailure(command, error)));
process.on('unhandledRejection', (error) => process.exit(reportFailure(command, error)));
stopWhenOrphaned();
process.exitCode = await runCli(process.argv.slice(2));
