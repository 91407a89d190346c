// Entry of the token budget shared by replicas through Redis. Separate from ./index.ts
// because it loads the redis client package.

export { CentralBudgetUnavailable } from './errors.ts';
export { type BudgetRedisClient, type BudgetRedisOptions, connectBudgetRedis, redactUrl } from './redis-client.ts';
export { type RedisScriptClient, RedisTokenBudget, type RedisTokenBudgetOptions } from './redis-token-budget.ts';
