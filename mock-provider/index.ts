// Public entry of the mock provider (reached by other parts only over HTTP; this is for
// starting it in-process, e.g. from tests and `npm start`).
export {
  ConfigError,
  MAX_LATENCY_MS,
  MAX_OUTPUT_TOKENS,
  MAX_PER_TOKEN_MS,
  MAX_TIMER_MS,
  type Distribution,
  boundedDistributionSchema,
  defaultConfig,
  type FaultsConfig,
  faultsSchema,
  type MockConfig,
  type MockConfigInput,
  type MockConfigPatch,
  mergeConfig,
  mockConfigSchema,
  parseConfig,
  parseServerLimits,
  type ServerLimits,
  type ServerLimitsInput,
  serverLimitsSchema,
  type TimelineStep,
} from './config.ts';
export type { Clock } from './quota.ts';
export { DEFAULT_HOST, DEFAULT_PORT } from './listen.ts';
export {
  createMockApp,
  type MockProvider,
  type MockProviderOptions,
  startMockProvider,
  wallClock,
} from './server.ts';
export type { MockState } from './state.ts';
export { CHARS_PER_TOKEN, tokensForCharacters } from './tokens.ts';
