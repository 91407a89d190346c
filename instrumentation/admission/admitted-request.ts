// One user request admitted at the door, and the async context that carries it to every
// model call it makes. ADK runs every branch, loop body and AgentTool sub-run of a request
// inside its runAsync, so an AsyncLocalStorage opened around that run reaches exactly this
// request's calls, however many requests interleave on one wrapper.
//
// A request holds one reservation per limiter (its funded share): its calls draw from it and
// never wait for budget, so nested calls of one request cannot deadlock on the request's own
// reservation. When the request ends the share is settled against what its calls counted:
// the unused part returns, an overrun is taken as debt.
import { AsyncLocalStorage } from 'node:async_hooks';
import { BUDGET_FUNDED, type CallFunding, type FundedShare } from './funded-share.ts';

/** What a limiter tells its request about one finished call. */
export interface RequestCall {
  readonly ok: boolean;
  readonly countedTokens: number;
}

/** A message as a model call carries it (ADK's Content, structurally). */
export interface MessageContent {
  readonly role?: string;
  readonly parts?: readonly { readonly text?: string }[];
}

/** A message's text: its parts' text joined. */
export function messageTextOf(content: MessageContent): string {
  return (content.parts ?? []).map((part) => part.text ?? '').join('');
}

export class AdmittedRequest {
  /** When the request arrived, on the admission's clock. */
  readonly arrivedAt: number;
  /** When it was admitted: its calls wait for permits in this order, then in call order. */
  readonly admittedAt: number;
  /** Absolute time on the admission's clock by which the request should be answered. */
  readonly deadline: number;
  readonly lane: string | undefined;
  /** Counted tokens of the request's own message (0 when unknown): its calls' cost is learned beyond them. */
  readonly messageTokens: number;
  /** The text of the request's own message; undefined when unknown or without text. */
  readonly #messageText: string | undefined;
  /** Funded shares, keyed by the limiter (a RateLimitedLlm) they were reserved for. */
  readonly #shares: Map<object, FundedShare>;
  /** Calls started so far, per limiter and agent. */
  readonly #started = new Map<object, Map<string, number>>();
  /** Counted tokens of every call, by limiter name (funded or not). */
  readonly tokensByLimiter = new Map<string, number>();
  calls = 0;
  failedCalls = 0;
  #settled = false;

  constructor(
    arrivedAt: number,
    admittedAt: number,
    deadline: number,
    lane: string | undefined,
    shares: Map<object, FundedShare>,
    messageTokens = 0,
    messageText?: string,
  ) {
    this.messageTokens = messageTokens;
    this.#messageText = messageText || undefined;
    this.arrivedAt = arrivedAt;
    this.admittedAt = admittedAt;
    this.deadline = deadline;
    this.lane = lane;
    this.#shares = shares;
  }

  /**
   * Whether a model call's prompt (`contents`) carries the request's own message: the tree's
   * agents see it in their session history; an AgentTool's agent runs in a session of its own,
   * on the tool's input. Taken to carry it when the message's text is unknown.
   */
  carriesMessage(contents: readonly MessageContent[] | undefined): boolean {
    const text = this.#messageText;
    return text === undefined || (contents ?? []).some((content) => content.role === 'user' && messageTextOf(content) === text);
  }

  /** How a call of `agent` on `limiter` is paid: from the share funded there for that agent, else by the budget alone. */
  fundingOf(limiter: object, agent: string): CallFunding {
    return this.#shares.get(limiter)?.fundingOf(agent) ?? BUDGET_FUNDED;
  }

  /** Record a finished (or refused) call of this request on `limiter`. */
  recordCall(limiter: object, limiterName: string, call: RequestCall): void {
    this.calls++;
    if (!call.ok) this.failedCalls++;
    this.tokensByLimiter.set(limiterName, (this.tokensByLimiter.get(limiterName) ?? 0) + call.countedTokens);
    const share = this.#shares.get(limiter);
    if (!share) return;
    share.spent += call.countedTokens;
    // A call that ended closes the request's start: what it calls next waits on its own.
    share.endStart();
  }

  /** A call of `agent` on `limiter` started: which of the request's calls of that agent there it is (0: the first). */
  startedCall(limiter: object, agent: string): number {
    let byAgent = this.#started.get(limiter);
    if (!byAgent) {
      byAgent = new Map();
      this.#started.set(limiter, byAgent);
    }
    const nth = byAgent.get(agent) ?? 0;
    byAgent.set(agent, nth + 1);
    return nth;
  }

  /** Whether every call so far ended ok. */
  get wholeOk(): boolean {
    return this.failedCalls === 0;
  }

  /** Settle every share once: give back what was not used, take an overrun as debt. */
  settle(): void {
    if (this.#settled) return;
    this.#settled = true;
    for (const share of this.#shares.values()) share.settle();
  }
}

// One store per process, shared by every copy of this module (a user's module may bring its own).
const STORE_KEY = Symbol.for('quotascope.admittedRequest');
const globals = globalThis as unknown as Record<symbol, AsyncLocalStorage<AdmittedRequest> | undefined>;
const store: AsyncLocalStorage<AdmittedRequest> = globals[STORE_KEY] ?? new AsyncLocalStorage<AdmittedRequest>();
globals[STORE_KEY] = store;

/** The admitted request whose run is the current async context, if any. */
export function currentRequest(): AdmittedRequest | undefined {
  return store.getStore();
}

/** Run `fn` as part of `request`: every model call made inside it belongs to the request. */
export function runInRequest<T>(request: AdmittedRequest, fn: () => T): T {
  return store.run(request, fn);
}
