// Public entry of the mock provider (reached by other parts only over HTTP; this is for
// starting it in-process, e.g. from tests and `npm start`).
export {
  ConfigError,
  type Distribution,
  defaultConfig,
  distributionSchema,
  type FaultsConfig,
  faultsSchema,
  type MockConfig,
  type MockConfigInput,
  type MockConfigPatch,
  mergeConfig,
  mockConfigSchema,
  parseConfig,
  type TimelineStep,
} from './config.ts';
export type { Clock } from './quota.ts';
export {
  createMockApp,
  DEFAULT_HOST,
  DEFAULT_PORT,
  type MockProvider,
  type MockProviderOptions,
  startMockProvider,
  wallClock,
} from './server.ts';
export type { MockState } from './state.ts';
export { CHARS_PER_TOKEN, tokensForCharacters } from './tokens.ts';
