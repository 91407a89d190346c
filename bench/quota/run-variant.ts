// One variant of the quota benchmark: a fresh mock provider (the oracle) in its own process,
// `replicas` ADK review trees each on its own model, user requests sent round-robin at the
// load's arrival times, then the figures the mock counted per window and the load saw.
import { type Event, InMemoryRunner } from '@google/adk';
import { collectBranchOutcomes } from '../../agent/outcomes.ts';
import { buildTree } from '../../agent/trees.ts';
import { documentForTokens } from '../../loadtest/scenario/document.ts';
import { RequestShed } from '../../instrumentation/errors.ts';
import type { RequestAdmission } from '../../instrumentation/admission/request-admission.ts';
import { startChild, stopChild } from '../support/child-process.ts';
import { createReplicaModels, type VariantName, type VariantSettings } from './variants.ts';

/** The mock provider's configuration the benchmark sets (GET /admin/config fields). */
export interface MockShape {
  readonly quotaWindowMs: number;
  readonly tokensPerMinute: number;
  readonly requestsPerMinute: number;
  readonly timeToFirstTokenMs: { kind: 'fixed'; value: number };
  readonly perOutputTokenMs: { kind: 'fixed'; value: number };
  readonly outputTokens: { kind: 'normal'; mean: number; stddev: number };
  readonly timeline?: readonly { at: number; set: Record<string, unknown> }[];
}

export interface VariantRun {
  readonly variant: VariantName;
  readonly settings: Omit<VariantSettings, 'providerUrl' | 'apiKey' | 'redisKey' | 'requestDeadlineMs'>;
  readonly mock: MockShape;
  /** Arrival times, ms from the start of the load. */
  readonly arrivals: readonly number[];
  readonly loadMs: number;
  /** After the load, how long requests still running may finish before they are cut off. */
  readonly graceMs: number;
  readonly inputTokensPerCall: number;
  /** The request deadline (already compressed): goodput within the SLO counts whole requests that ended within it. */
  readonly requestDeadlineMs: number;
}

export interface WindowFigures {
  readonly start: number;
  readonly tokens: number;
  readonly requests: number;
  readonly rateLimited: number;
  /** Sum of the replicas' permit limits sampled at the window's end (undefined without permits). */
  readonly permits?: number;
  /** Sum of the replicas' budget window limits sampled at the window's end (undefined without budgets). */
  readonly tokenLimit?: number;
}

export interface VariantResult {
  readonly variant: VariantName;
  readonly requests: number;
  /** Requests whose every branch ended ok. */
  readonly okRequests: number;
  /**
   * Goodput's count: whole requests (every branch ok) that ended within the load after its
   * first window (warm-up), so a backlog worked off after the load earns nothing.
   */
  readonly wholeInLoad: number;
  /** The span wholeInLoad is counted over, ms. */
  readonly goodputMs: number;
  /** When the mock's configuration (and its timeline) was set, epoch ms. */
  readonly configuredAt: number;
  /** Requests still running at the cut-off (counted as not ok, their latency censored there). */
  readonly cutOff: number;
  /** Requests that ended with some branch ok and some not (a missing branch). */
  readonly partialRequests: number;
  /** Requests shed whole at the door (request admission: RequestShed before any model call). */
  readonly shedRequests: number;
  /** Input tokens (what the quota counts) the provider reported for every request, and for the ones not wholly ok. */
  readonly countedTokens: number;
  readonly wastedTokens: number;
  /** Goodput's count, within the request deadline: whole requests in the goodput span that took at most requestDeadlineMs. */
  readonly wholeWithinDeadline: number;
  readonly latenciesMs: readonly number[];
  /** Branches that ended in the limiter's timeout. */
  readonly timeouts: number;
  /** 429s the provider answered (every attempt). */
  readonly provider429s: number;
  /** The windows that lay wholly inside the load, as the provider counted them. */
  readonly windows: readonly WindowFigures[];
  readonly loadMs: number;
}

const APP = 'quota-bench';

interface Outcome {
  readonly ms: number;
  /** When it ended, epoch ms. */
  readonly endAt: number;
  readonly ok: boolean;
  /** Some branch ok, some not. */
  readonly partial: boolean;
  /** Refused whole by request admission before any model call. */
  readonly shed: boolean;
  readonly timeouts: number;
  readonly cut: boolean;
  /** Input tokens the provider reported for the request's model calls. */
  readonly tokens: number;
}

/** Runs one variant against its own mock provider; redisUrl is needed for the central variant. */
export async function runVariant(run: VariantRun, redisUrl?: string): Promise<VariantResult> {
  const mock = await startChild(['cli/quotascope.ts', 'mock-provider', '--port', '0', '--host', '127.0.0.1']);
  try {
    const put = await fetch(`${mock.url}/admin/config`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(run.mock),
    });
    if (!put.ok) throw new Error(`mock provider config: ${put.status} ${await put.text()}`);
    const configuredAt = Date.now();
    const settings: VariantSettings = {
      ...run.settings,
      providerUrl: mock.url,
      apiKey: 'bench-key',
      redisUrl,
      redisKey: `quotascope:bench:${process.pid}:${Date.now()}`,
      requestDeadlineMs: run.requestDeadlineMs,
    };
    const models = await createReplicaModels(run.variant, settings);
    try {
      return { ...(await drive(run, models, mock.url)), configuredAt };
    } finally {
      for (const m of models) await m.close();
    }
  } finally {
    await stopChild(mock.child);
  }
}

async function drive(
  run: VariantRun,
  models: Awaited<ReturnType<typeof createReplicaModels>>,
  mockUrl: string,
): Promise<Omit<VariantResult, 'configuredAt'>> {
  const replicas = models.map((m) => {
    const tree = buildTree('review', m.model, { branches: 8, width: 4, toolDelayMs: 0 });
    return { tree, runner: new InMemoryRunner({ agent: tree.root, appName: APP }), admission: m.admission };
  });
  const document = documentForTokens(run.inputTokensPerCall);
  const cutOff = new AbortController();
  const permitSamples: { at: number; permits: number | undefined; tokenLimit: number | undefined }[] = [];
  const windowMs = run.mock.quotaWindowMs;
  const started = Date.now();
  // The permits of every replica at each window's end (AIMD moves them).
  const sampler = setInterval(() => {
    let permits: number | undefined = 0;
    let tokenLimit: number | undefined = 0;
    for (const m of models) {
      const limit = m.permitLimit();
      permits = limit === undefined || permits === undefined ? undefined : permits + limit;
      const tokens = m.tokenLimit?.();
      tokenLimit = tokens === undefined || tokenLimit === undefined ? undefined : tokenLimit + tokens;
    }
    permitSamples.push({ at: Date.now(), permits, tokenLimit });
  }, windowMs / 4);

  const pending: Promise<Outcome>[] = [];
  let next = 0;
  for (const at of run.arrivals) {
    const wait = started + at - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const replica = replicas[next++ % replicas.length];
    pending.push(request(replica, document, cutOff.signal));
  }
  const loadEnd = started + run.loadMs;
  if (loadEnd > Date.now()) await new Promise((resolve) => setTimeout(resolve, loadEnd - Date.now()));
  const cut = setTimeout(() => cutOff.abort(new Error('benchmark cut-off')), run.graceMs);
  const outcomes = await Promise.all(pending);
  clearTimeout(cut);
  clearInterval(sampler);

  const record = (await (await fetch(`${mockUrl}/admin/quota/windows`)).json()) as {
    windows: { start: number; tokens: number; requests: number; rateLimited: number }[];
  };
  const allWindows = record.windows;
  const inside = allWindows
    .filter((w) => w.start >= started && w.start + windowMs <= loadEnd)
    .map((w) => {
      const end = w.start + windowMs;
      const sample = permitSamples.filter((s) => s.at <= end).at(-1);
      return {
        ...w,
        ...(sample?.permits === undefined ? {} : { permits: sample.permits }),
        ...(sample?.tokenLimit === undefined ? {} : { tokenLimit: Math.round(sample.tokenLimit) }),
      };
    });
  const inGoodputSpan = (o: Outcome) => o.ok && o.endAt >= started + windowMs && o.endAt <= loadEnd;
  return {
    variant: run.variant,
    requests: outcomes.length,
    okRequests: outcomes.filter((o) => o.ok).length,
    wholeInLoad: outcomes.filter(inGoodputSpan).length,
    wholeWithinDeadline: outcomes.filter((o) => inGoodputSpan(o) && o.ms <= run.requestDeadlineMs).length,
    partialRequests: outcomes.filter((o) => o.partial).length,
    shedRequests: outcomes.filter((o) => o.shed).length,
    countedTokens: outcomes.reduce((sum, o) => sum + o.tokens, 0),
    wastedTokens: outcomes.reduce((sum, o) => sum + (o.ok ? 0 : o.tokens), 0),
    goodputMs: run.loadMs - windowMs,
    cutOff: outcomes.filter((o) => o.cut).length,
    latenciesMs: outcomes.map((o) => o.ms),
    timeouts: outcomes.reduce((sum, o) => sum + o.timeouts, 0),
    provider429s: allWindows.reduce((sum, w) => sum + w.rateLimited, 0),
    windows: inside,
    loadMs: run.loadMs,
  };
}

/** One user request through a replica's review tree; never rejects, and returns at the cut-off at the latest. */
async function request(
  replica: { tree: ReturnType<typeof buildTree>; runner: InMemoryRunner; admission?: RequestAdmission },
  document: string,
  cutOff: AbortSignal,
): Promise<Outcome> {
  const start = performance.now();
  const { runner, tree, admission } = replica;
  const events: Event[] = [];
  let shed = false;
  const runTree = async () => {
    const session = await runner.sessionService.createSession({ appName: APP, userId: 'bench' });
    try {
      for await (const event of runner.runAsync({
        userId: 'bench',
        sessionId: session.id,
        newMessage: { role: 'user', parts: [{ text: document }] },
        runConfig: { maxLlmCalls: tree.maxLlmCalls },
        abortSignal: cutOff,
      })) {
        events.push(event);
      }
    } finally {
      await runner.sessionService.deleteSession({ appName: APP, userId: 'bench', sessionId: session.id });
    }
  };
  // As the agent service runs it: admitted whole at the door (or shed), or call by call.
  const run = (admission ? admission.run(runner.agent, runTree, { signal: cutOff }) : runTree()).then(
    () => 'done' as const,
    // A thrown run (ADK rethrows non-Error values) is a failed request; RequestShed is a shed one.
    (error: unknown) => {
      shed = error instanceof RequestShed;
      return 'failed' as const;
    },
  );
  const cut = new Promise<'cut'>((resolve) => {
    if (cutOff.aborted) resolve('cut');
    cutOff.addEventListener('abort', () => resolve('cut'), { once: true });
  });
  const ended = await Promise.race([run, cut]);
  const ms = performance.now() - start;
  const endAt = Date.now();
  const tokens = events.reduce((sum, e) => sum + (e.partial ? 0 : (e.usageMetadata?.promptTokenCount ?? 0)), 0);
  if (ended === 'cut') return { ms, endAt, ok: false, partial: false, shed: false, timeouts: 0, cut: true, tokens };
  const branches = collectBranchOutcomes(events, tree.branches);
  const okBranches = branches.filter((b) => b.outcome === 'ok').length;
  const ok = ended === 'done' && okBranches === branches.length;
  return {
    ms,
    endAt,
    ok,
    partial: !shed && !ok && okBranches > 0,
    shed,
    timeouts: branches.filter((b) => b.outcome === 'timeout').length,
    cut: false,
    tokens,
  };
}
