// The names of the alerts (CamelCase), listed apart from their specs so the config schema
// can validate per-alert settings without importing the specs it configures.
export const alertNames = [
  'LimiterAcquireTimeRising',
  'LimiterDoorWaitRising',
  'LimiterRequestsShed',
  'LimiterMaxWaitMissing',
  'LimiterTimeouts',
  'ProviderRateLimitedDespiteLimiter',
  'LimiterPermitsSaturated',
  'LimiterBudgetExhausted',
  'LimiterBudgetNegative',
  'LimiterTokenEstimateDrift',
  'LimiterPermitLeak',
  'LimiterPermitsReclaimed',
  'QuotascopeTargetDown',
] as const;

export type AlertName = (typeof alertNames)[number];
