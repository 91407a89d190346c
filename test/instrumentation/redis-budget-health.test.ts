// RedisTokenBudget's own command deadline and health probe, on fake time with a scripted
// Redis client (what is under test is the budget's timing logic, not Redis; the real
// redis-server cases are in redis-token-budget.test.ts and test/chaos/redis-outage.test.ts).
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { realClock, withDeadline } from '../../instrumentation/clock.ts';
import { CentralBudgetUnavailable } from '../../instrumentation/errors.ts';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { RedisTokenBudget, type RedisTokenBudgetOptions, type RedisScriptClient } from '../../instrumentation/redis.ts';
import { ManualClock } from '../../instrumentation/testing.ts';
import { metricValue } from './helpers.ts';

/** Answers the rolling-window script from a level that never refills; `hung` makes every command wait forever. */
class ScriptedRedis implements RedisScriptClient {
  isReady = true;
  hung = false;
  /** Tokens the window may still take. */
  level: number;
  commands = 0;
  reconnects = 0;

  constructor(level: number) {
    this.level = level;
  }

  evalSha(_sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown> {
    this.commands++;
    if (this.hung) return new Promise(() => {});
    const [limit, , op, carry, , ...args] = options.arguments as string[];
    this.level -= Number(carry);
    let granted = 0;
    if (op === 'take') {
      for (const amount of args) {
        if (this.level < Number(amount)) break;
        this.level -= Number(amount);
        granted++;
      }
    } else if (op === 'settle') {
      for (let i = 1; i < args.length; i += 4) this.level -= Number(args[i]);
    }
    const waiting = op === 'take' && granted < args.length;
    return Promise.resolve([granted, String(Number(limit) - this.level), waiting ? 60_000 : 0, '1', 0, '0', 0, '0']);
  }

  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown> {
    return this.evalSha(script, options);
  }

  reconnect(): void {
    this.reconnects++;
  }
}

function budgetOn(redis: ScriptedRedis, options: Partial<RedisTokenBudgetOptions> = {}) {
  const clock = new ManualClock();
  const registry = new Registry();
  const changes: boolean[] = [];
  const budget = new RedisTokenBudget({
    client: redis,
    name: 'unit',
    tokensPerMinute: 60_000,
    localShareTokensPerMinute: 6_000,
    commandDeadlineMs: 500,
    healthCheckIntervalMs: 1_000,
    retryRedisAfterMs: 1_000,
    clock,
    registry,
    onCentralChange: (central) => changes.push(central),
    ...options,
  });
  const unavailable = (handling: string) => metricValue(registry, limiterMetrics.budgetCentralUnavailable.name, { limiter: 'unit', handling });
  return { budget, clock, changes, unavailable };
}

describe('withDeadline', () => {
  it('an answer read after the event loop was blocked past the deadline still wins', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    const [serverSide] = await accepted;
    await once(client, 'connect');
    let expired = 0;
    const answered = withDeadline(once(client, 'data'), 20, realClock, () => {
      expired++;
      return new Error('deadline');
    });
    serverSide.write('+PONG\r\n'); // in the kernel now; read once the loop runs again
    const blockedUntil = performance.now() + 100;
    while (performance.now() < blockedUntil) {
      // the loop is blocked past the deadline: its timer is due before the socket is read
    }
    await expect(answered).resolves.toBeDefined();
    expect(expired).toBe(0);
    client.destroy();
    serverSide.destroy();
    server.close();
  });

  it('no answer: rejects with the deadline error once', async () => {
    let expired = 0;
    const never = new Promise<never>(() => {});
    await expect(withDeadline(never, 10, realClock, () => new Error(`deadline ${++expired}`))).rejects.toThrow('deadline 1');
  });
});

describe('RedisTokenBudget: a command deadline of its own', () => {
  it('a command Redis never answers ends at the deadline: fail-open serves the local share, reconnects once, says so once', async () => {
    const redis = new ScriptedRedis(60_000);
    const { budget, clock, changes, unavailable } = budgetOn(redis);
    redis.hung = true;
    let granted = false;
    const reserved = budget.reserve(1_000, { deadline: 20_000 }).then(() => {
      granted = true;
    });
    await clock.advance(499);
    expect(granted).toBe(false);
    await clock.advance(1);
    await reserved;
    expect(budget.central).toBe(false);
    expect(redis.reconnects).toBe(1);
    expect(await unavailable('local_share')).toBe(1);
    // Within retryRedisAfterMs the next reservations go straight to the local share: no command, no wait.
    const commands = redis.commands;
    await Promise.all([budget.reserve(100), budget.reserve(100)]);
    expect(redis.commands).toBe(commands);
    expect(await unavailable('local_share')).toBe(3);
    expect(changes).toEqual([false]); // one transition, one log line
    await budget.close();
  });

  it('fail-closed: the reservation is refused at the deadline with BUDGET_UNAVAILABLE naming it', async () => {
    const redis = new ScriptedRedis(60_000);
    const { budget, clock, unavailable } = budgetOn(redis, { centralOutage: 'fail-closed' });
    redis.hung = true;
    const refused = budget.reserve(1_000, { deadline: 20_000 }).catch((error: unknown) => error);
    await clock.advance(500);
    const error = await refused;
    expect(error).toBeInstanceOf(CentralBudgetUnavailable);
    expect((error as Error).message).toContain('did not answer within 500 ms (commandDeadlineMs)');
    await expect(budget.reserve(10)).rejects.toBeInstanceOf(CentralBudgetUnavailable);
    expect(await unavailable('refused')).toBe(2);
    expect(await unavailable('local_share')).toBe(0);
    await budget.close();
  });

  it('close() is bounded by the deadline while a reconciliation hangs, and leaves no timer behind', async () => {
    const redis = new ScriptedRedis(60_000);
    const { budget, clock } = budgetOn(redis);
    const ticket = await budget.reserve(1_000);
    redis.hung = true;
    budget.reconcile(ticket, 400);
    let closed = false;
    const closing = budget.close().then(() => {
      closed = true;
    });
    await clock.advance(499);
    expect(closed).toBe(false);
    await clock.advance(1);
    await closing;
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('RedisTokenBudget: health from a periodic probe', () => {
  it('an idle budget notices an outage and the recovery by itself, one transition each', async () => {
    const redis = new ScriptedRedis(60_000);
    const { budget, clock, changes } = budgetOn(redis);
    await clock.advance(1_000);
    expect(budget.central).toBe(true);
    redis.hung = true;
    await clock.advance(1_000); // the probe is sent
    expect(budget.central).toBe(true);
    await clock.advance(500); // ... and passes its deadline
    expect(budget.central).toBe(false);
    for (let i = 0; i < 10; i++) await clock.advance(1_000);
    expect(changes).toEqual([false]); // still down: no more log lines
    redis.hung = false;
    await clock.advance(1_500);
    expect(budget.central).toBe(true);
    expect(changes).toEqual([false, true]);
    await budget.close();
  });

  it('probes never overlap: one hung probe at a time, the next after its deadline', async () => {
    const redis = new ScriptedRedis(60_000);
    const { budget, clock } = budgetOn(redis, { healthCheckIntervalMs: 100, commandDeadlineMs: 450 });
    redis.hung = true;
    for (let i = 0; i < 40; i++) {
      await clock.advance(50);
      // A hung probe is abandoned at its deadline (a reconnect asked for) before the next is sent.
      expect(redis.commands - redis.reconnects).toBeLessThanOrEqual(1);
    }
    expect(redis.commands).toBeGreaterThan(2);
    await budget.close();
  });

  it('a client that is not connected counts as down without a command being sent', async () => {
    const redis = new ScriptedRedis(60_000);
    const { budget, clock, changes } = budgetOn(redis);
    redis.isReady = false;
    await clock.advance(1_000);
    expect(budget.central).toBe(false);
    expect(redis.commands).toBe(0);
    expect(changes).toEqual([false]);
    await budget.close();
  });

  it('the probe refreshes the level an idle replica reports', async () => {
    const redis = new ScriptedRedis(60_000);
    const { budget, clock } = budgetOn(redis);
    redis.level = 12_345; // another replica spent the rest
    await clock.advance(1_000);
    expect(budget.available).toBeLessThan(13_000);
    await budget.close();
  });
});

describe('RedisTokenBudget options', () => {
  it('are validated, naming the field', () => {
    const redis = new ScriptedRedis(1);
    const make = (options: Partial<RedisTokenBudgetOptions>) => () =>
      new RedisTokenBudget({ client: redis, name: 'unit', tokensPerMinute: 1_000, registry: new Registry(), ...options });
    expect(make({ centralOutage: 'fail-open' })).toThrow(/localShareTokensPerMinute: required for centralOutage "fail-open"/);
    expect(make({ healthCheckIntervalMs: 3_000_000_000 })).toThrow(/healthCheckIntervalMs/);
    expect(make({ commandDeadlineMs: 0 })).toThrow(/commandDeadlineMs/);
    expect(make({ centralOutage: 'sometimes' as never })).toThrow(/centralOutage/);
    const closedByDefault = make({})();
    expect(closedByDefault.centralOutage).toBe('fail-closed');
    void closedByDefault.close();
    const openWithShare = make({ localShareTokensPerMinute: 100 })();
    expect(openWithShare.centralOutage).toBe('fail-open');
    void openWithShare.close();
  });
});
