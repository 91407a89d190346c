// `quotascope convert-trace <access-log>`: turns the agent service's JSON-lines access log
// into a trace the `trace` scenario replays.
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { z } from 'zod';
import { FlagSet } from './flags.ts';
import { replaceFile } from '../shared/replace-files.ts';

const FLAGS = {
  out: { flag: 'out', formerEnv: 'CONVERT_TRACE_OUT', value: 'file', help: 'write the trace (JSON lines) here', schema: z.string().min(1).optional(), defaultText: 'stdout' },
} as const;

export function convertTraceCommand(): Command {
  const command = new Command('convert-trace')
    .description("turn the agent service's access log (--access-log) into a replayable trace")
    .argument('<access-log>', 'the JSON-lines access log');
  const flags = new FlagSet(command, FLAGS);
  command.action(async (accessLog: string) => {
    const { convertAccessLog, toJsonLines } = await import('../loadtest/scenario/trace-convert.ts');
    const jsonl = toJsonLines(convertAccessLog(readFileSync(accessLog, 'utf8'), accessLog));
    const out = flags.values().out as string | undefined;
    if (out) replaceFile(out, jsonl);
    else process.stdout.write(jsonl);
  });
  return command;
}
