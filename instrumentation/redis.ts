// Entry of the token budget shared by replicas through Redis. Separate from ./index.ts
// because it loads the redis client package.

export { CentralBudgetUnavailable } from './errors.ts';
export { BudgetRedisClient, type BudgetRedisOptions, connectBudgetRedis, redactUrl } from './budget/redis-client.ts';
export {
  DEFAULT_REDIS_COMMAND_DEADLINE_MS,
  DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS,
  type RedisScriptClient,
  RedisTokenBudget,
  type RedisTokenBudgetOptions,
} from './budget/redis-token-budget.ts';
