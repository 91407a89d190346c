// serve's session store: ADK's in-memory sessions with a bound, because ADK's own clients
// often create a session per conversation and never delete it. At most `maxSessions` are
// kept; creating one more evicts the session idle longest (one with a run in flight is never
// evicted), and a session unused for `idleMs` is evicted by a sweep. Evictions are counted
// in agent_sessions_evicted_total{reason}; agent_sessions_stored is the number kept. A user's
// `user:` state lives as long as one of their sessions does.
import {
  type CreateSessionRequest,
  type DeleteSessionRequest,
  type AppendEventRequest,
  type Event,
  type GetSessionRequest,
  InMemorySessionService,
  type Session,
} from '@google/adk';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { MetricDefinition } from '../../instrumentation/index.ts';

export const sessionMetrics = {
  stored: {
    name: 'agent_sessions_stored',
    help: 'ADK sessions serve keeps in memory (at most --max-sessions).',
    type: 'gauge',
    labelNames: [],
  },
  evicted: {
    name: 'agent_sessions_evicted_total',
    help: 'ADK sessions serve evicted: capacity (the oldest idle one, to make room under --max-sessions) or idle (unused for --session-idle-ms).',
    type: 'counter',
    labelNames: ['reason'],
  },
} as const satisfies Record<string, MetricDefinition>;

/** Every session is at most this and all of them are running: a new one cannot be made. */
export class SessionLimitError extends Error {
  override name = 'SessionLimitError';
}

export interface SessionLimits {
  readonly maxSessions: number;
  readonly idleMs: number;
  /** ms; tests pass their own. */
  readonly now?: () => number;
}

type Key = string;
/** InMemorySessionService's private maps: app name → user id → values. */
type AdkMaps = Record<string, Record<string, Record<string, unknown>>>;
const keyOf = (appName: string, userId: string, sessionId: string): Key => JSON.stringify([appName, userId, sessionId]);

export class BoundedSessionService extends InMemorySessionService {
  readonly #limits: Required<SessionLimits>;
  /** Last use of each kept session, least recently used first. */
  readonly #lastUsed = new Map<Key, number>();
  /** Runs in flight per session: such a session is in use, never idle. */
  readonly #running = new Map<Key, number>();
  readonly #evicted: Counter<'reason'>;
  readonly #sweep: NodeJS.Timeout;

  constructor(limits: SessionLimits, registry: Registry) {
    super();
    this.#limits = { now: () => performance.now(), ...limits };
    const lastUsed = this.#lastUsed;
    new Gauge({
      ...sessionMetrics.stored,
      labelNames: [],
      registers: [registry],
      collect() {
        this.set(lastUsed.size);
      },
    });
    this.#evicted = new Counter({ ...sessionMetrics.evicted, labelNames: [...sessionMetrics.evicted.labelNames], registers: [registry] });
    for (const reason of ['capacity', 'idle']) this.#evicted.inc({ reason }, 0);
    this.#sweep = setInterval(() => void this.evictIdle(), Math.min(this.#limits.idleMs / 4, 60_000));
    this.#sweep.unref();
  }

  get size(): number {
    return this.#lastUsed.size;
  }

  override async createSession(request: CreateSessionRequest): Promise<Session> {
    await this.evictIdle();
    if (this.#lastUsed.size >= this.#limits.maxSessions) await this.#evictOldestIdle();
    const session = await super.createSession(request);
    this.#touch(keyOf(session.appName, session.userId, session.id));
    return session;
  }

  override async getSession(request: GetSessionRequest): Promise<Session | undefined> {
    const session = await super.getSession(request);
    if (session) this.#touch(keyOf(request.appName, request.userId, request.sessionId));
    return session;
  }

  override async deleteSession(request: DeleteSessionRequest): Promise<void> {
    await super.deleteSession(request);
    this.#forget(request);
  }

  override async appendEvent(request: AppendEventRequest): Promise<Event> {
    const event = await super.appendEvent(request);
    const { appName, userId, id } = request.session;
    if (this.#lastUsed.has(keyOf(appName, userId, id))) this.#touch(keyOf(appName, userId, id));
    return event;
  }

  /** Marks a session in use for the length of a run; call the returned function when it ends. */
  hold(appName: string, userId: string, sessionId: string): () => void {
    const key = keyOf(appName, userId, sessionId);
    this.#running.set(key, (this.#running.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#running.get(key) ?? 1) - 1;
      if (left > 0) this.#running.set(key, left);
      else this.#running.delete(key);
      if (this.#lastUsed.has(key)) this.#touch(key);
    };
  }

  /** Evicts every session unused for longer than the idle limit. */
  async evictIdle(): Promise<void> {
    const oldest = this.#limits.now() - this.#limits.idleMs;
    for (const [key, lastUsed] of [...this.#lastUsed]) {
      if (lastUsed > oldest) break; // least recently used first: the rest are newer
      if (this.#running.has(key)) continue;
      await this.#evict(key, 'idle');
    }
  }

  close(): void {
    clearInterval(this.#sweep);
  }

  async #evictOldestIdle(): Promise<void> {
    for (const key of this.#lastUsed.keys()) {
      if (this.#running.has(key)) continue;
      await this.#evict(key, 'capacity');
      return;
    }
    throw new SessionLimitError(`all ${this.#limits.maxSessions} sessions have a run in flight (--max-sessions); retry when one ends`);
  }

  async #evict(key: Key, reason: 'capacity' | 'idle'): Promise<void> {
    const [appName, userId, sessionId] = JSON.parse(key) as [string, string, string];
    await super.deleteSession({ appName, userId, sessionId });
    this.#forget({ appName, userId, sessionId });
    this.#evicted.inc({ reason });
  }

  #touch(key: Key): void {
    this.#lastUsed.delete(key);
    this.#lastUsed.set(key, this.#limits.now());
  }

  /**
   * Drops the tracking of a deleted session; once a user has no session left, ADK's map of
   * their sessions and their `user:` state go too (kept for ever otherwise, one per user id).
   */
  #forget({ appName, userId, sessionId }: DeleteSessionRequest): void {
    this.#lastUsed.delete(keyOf(appName, userId, sessionId));
    const adk = this as unknown as { sessions: AdkMaps; userState: AdkMaps };
    const byUser = adk.sessions[appName];
    if (byUser?.[userId] && Object.keys(byUser[userId]).length === 0) {
      delete byUser[userId];
      if (adk.userState[appName]) delete adk.userState[appName][userId];
    }
  }
}
