// The protocol and ADK app chosen on the command line, over what the scenario file says.
import { parseScenario, ScenarioError } from './schema.ts';
import type { ScenarioFile } from './types.ts';

export interface ProtocolChoice {
  protocol?: 'native' | 'adk';
  app?: string;
  basePath?: string;
}

/** Applies --protocol, --app and --base-path; the result is validated like a scenario file. */
export function withProtocol(s: ScenarioFile, choice: ProtocolChoice): ScenarioFile {
  const protocol = choice.protocol ?? s.protocol ?? 'native';
  if (protocol !== 'adk') {
    if (choice.app !== undefined || choice.basePath !== undefined) throw new ScenarioError('flags', '', '--app and --base-path need --protocol adk');
    return choice.protocol ? { ...s, protocol, adk: undefined } : s;
  }
  const app = choice.app ?? s.adk?.app;
  if (app === undefined) throw new ScenarioError('flags', '', '--protocol adk needs --app NAME (the app as GET /list-apps lists it)');
  const adk = { ...s.adk, app, ...(choice.basePath !== undefined ? { basePath: choice.basePath } : {}) };
  return parseScenario({ ...s, protocol, adk }, 'flags');
}
