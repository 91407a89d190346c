// The real redis-server starter lives in scripts/ (bench/ starts it too, and imports nothing under test/).
export { type RedisServer, startRedisServer } from '../../scripts/redis-server.ts';
