// Benchmark: quota efficiency. The worked example's shape (a review tree of 4 parallel
// reviewers + 1 synthesizer, 3 replicas, tokens binding, a budget of 90 % of the quota) at
// about 1.3× what the budget sustains, as bursts of whole fan-outs plus steady overload, run
// once per variant: no limiter (the SDK's retries), p-limit, Bottleneck, the plain bucket,
// and quotascope (default, central on a real redis-server, adaptive). Time is compressed:
// the mock provider's quota window (and with it every delay) is windowMs instead of a
// minute, so a variant runs for about a minute of wall clock.
//
// The mock provider is the oracle: its per-window record (GET /admin/quota/windows) gives
// the 429s it answered and the tokens it counted per window; the load gives goodput (user
// requests with every branch ok), latency and the limiter's timeouts. Then one more run of
// quotascope adaptive against a quota at 60 % of the planned one, raised to 100 % mid-run
// (a mock timeline step), shows AIMD converging and recovering.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LogLevel, setLogLevel } from '@google/adk';
import { startRedisServer } from '../scripts/redis-server.ts';
import { DEFAULT_REQUEST_DEADLINE_MS } from '../instrumentation/defaults.ts';
import { plan } from '../loadtest/planner/index.ts';
import { sampleTreeShapes } from '../agent/sample-shapes.ts';
import { modelCallsPerRequest, type TreeShape } from '../agent/tree-shapes.ts';
import { quotaPlot } from './quota/plot.ts';
import { type MockShape, runVariant, type VariantResult, type VariantRun } from './quota/run-variant.ts';
import { VARIANTS, type VariantName } from './quota/variants.ts';
import type { BenchModuleOptions, BenchRow } from './types.ts';

const here = dirname(fileURLToPath(import.meta.url));

export interface QuotaBenchOptions {
  /** The mock provider's quota window, ms: one "minute" of the worked example (default 6,000: 10× compressed). */
  readonly windowMs?: number;
  /** Windows of load per variant (default 10). */
  readonly loadWindows?: number;
  readonly variants?: readonly VariantName[];
  /** Also run the AIMD timeline (quota 60 % → 100 %), default true. */
  readonly aimdTimeline?: boolean;
  readonly quotaTokensPerWindow?: number;
  readonly inputTokensPerCall?: number;
  readonly outputTokensPerCall?: number;
  /** Model call time at the mock, ms of wall clock (default 800: 8 s compressed 10×). */
  readonly callMs?: number;
  /** Demand / what the budget sustains (default 1.3). */
  readonly overload?: number;
  readonly replicas?: number;
  /** Where the SVG goes (default bench/results/quota.svg); null: none. */
  readonly plotPath?: string | null;
  readonly log?: (line: string) => void;
  /** Where the quota table goes (default stdout, before the runner's tables). */
  readonly print?: (text: string) => void;
}

export const QUOTA_GROUP = 'quota efficiency: review tree at 1.3x the budget, 3 replicas (goodput)';
export const AIMD_GROUP = 'quotascope adaptive: quota at 60 % of the plan, raised to 100 % mid-run';
const BUDGET_FRACTION = 0.9;
/** The request deadline, uncompressed: the library's default. */
const REQUEST_DEADLINE_MS = DEFAULT_REQUEST_DEADLINE_MS;
/** The review tree's shape, the synthesizer's reading of the reviews included. */
const REVIEW_SHAPE = sampleTreeShapes().review as TreeShape;
const REVIEW_CALLS = modelCallsPerRequest(REVIEW_SHAPE);

/** The run's shape: the plan of the compressed worked example, and the load derived from it. */
export function benchShape(o: Required<Omit<QuotaBenchOptions, 'variants' | 'aimdTimeline' | 'plotPath' | 'log' | 'print'>>) {
  const scale = 60_000 / o.windowMs;
  const planInput = {
    ...REVIEW_SHAPE,
    userRequestsPerMinute: 1,
    inputTokensPerCall: o.inputTokensPerCall,
    outputTokensPerCall: o.outputTokensPerCall,
    latencySeconds: (o.callMs / 1000) * scale,
    quotaRequestsPerMinute: 100_000,
    quotaTokensPerMinute: o.quotaTokensPerWindow,
    countedTokens: 'input' as const,
    budgetFraction: BUDGET_FRACTION,
    replicas: o.replicas,
    toleratedWaitSeconds: 20,
  };
  const sustainedPerWindow = plan(planInput).perReplica.userRequestsPerMinuteExact * o.replicas;
  const demandPerWindow = sustainedPerWindow * o.overload;
  const p = plan({ ...planInput, userRequestsPerMinute: demandPerWindow });
  // Bursts of whole fan-outs every 3 windows (the worked example's 10 users against 30/min,
  // scaled), the rest of the demand as steady arrivals.
  const burstUsers = Math.max(1, Math.round((10 / 30) * sustainedPerWindow));
  const steadyPerWindow = Math.max(0, demandPerWindow - burstUsers / 3);
  const loadMs = o.loadWindows * o.windowMs;
  const arrivals: number[] = [];
  for (let at = 0; at < loadMs; at += 3 * o.windowMs) for (let u = 0; u < burstUsers; u++) arrivals.push(at);
  const gap = o.windowMs / Math.max(1e-9, steadyPerWindow);
  for (let at = gap / 2; at < loadMs; at += gap) arrivals.push(at);
  arrivals.sort((a, b) => a - b);
  const maxWaitMs = Math.round(20_000 / scale);
  const requestDeadlineMs = Math.round(REQUEST_DEADLINE_MS / scale);
  return {
    plan: p,
    sustainedPerWindow,
    demandPerWindow,
    burstUsers,
    arrivals,
    loadMs,
    maxWaitMs,
    requestDeadlineMs,
    graceMs: Math.max(2 * maxWaitMs, requestDeadlineMs) + 4 * o.callMs,
    fleetBudgetTokens: Math.floor(o.quotaTokensPerWindow * BUDGET_FRACTION),
    mock: (tokensPerWindow: number): MockShape => ({
      quotaWindowMs: o.windowMs,
      tokensPerMinute: tokensPerWindow,
      requestsPerMinute: 100_000,
      timeToFirstTokenMs: { kind: 'fixed', value: Math.round(o.callMs * 0.1) },
      perOutputTokenMs: { kind: 'fixed', value: (o.callMs * 0.9) / Math.max(1, o.outputTokensPerCall - 1) },
      outputTokens: { kind: 'normal', mean: o.outputTokensPerCall, stddev: o.outputTokensPerCall / 8 },
    }),
  };
}

function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

export interface VariantFigures {
  readonly provider429s: number;
  /** Mean and max tokens the provider counted per window, over the budget and over the quota. */
  readonly budgetUse: number;
  readonly budgetUseMax: number;
  readonly quotaUse: number;
  readonly quotaUseMax: number;
  readonly goodputPerMinute: number;
  readonly p95Ms: number;
  readonly timeouts: number;
  /** Model calls the provider answered per window / calls per request: served whole-request equivalents. */
  readonly servedPerWindow: number;
  /** Share of the requests that ended with a missing branch. */
  readonly partialRequests: number;
  /** Share of the counted tokens spent on requests that were not wholly ok. */
  readonly wastedTokens: number;
  /** Whole requests within the request deadline, per minute of load. */
  readonly goodputWithinSloPerMinute: number;
  /** Share of the requests shed whole at the door. */
  readonly shedRequests: number;
}

export function figuresOf(result: VariantResult, fleetBudget: number, quota: number): VariantFigures {
  const tokens = result.windows.map((w) => w.tokens);
  const mean = tokens.length ? tokens.reduce((a, b) => a + b, 0) / tokens.length : 0;
  const max = tokens.length ? Math.max(...tokens) : 0;
  return {
    provider429s: result.provider429s,
    budgetUse: mean / fleetBudget,
    budgetUseMax: max / fleetBudget,
    quotaUse: mean / quota,
    quotaUseMax: max / quota,
    goodputPerMinute: (result.wholeInLoad / result.goodputMs) * 60_000,
    p95Ms: percentile(result.latenciesMs, 0.95),
    timeouts: result.timeouts,
    servedPerWindow: result.windows.length ? result.windows.reduce((a, w) => a + w.requests, 0) / result.windows.length / REVIEW_CALLS : 0,
    partialRequests: result.requests ? result.partialRequests / result.requests : 0,
    wastedTokens: result.countedTokens ? result.wastedTokens / result.countedTokens : 0,
    goodputWithinSloPerMinute: (result.wholeWithinDeadline / result.goodputMs) * 60_000,
    shedRequests: result.requests ? result.shedRequests / result.requests : 0,
  };
}

const pct = (v: number) => `${(v * 100).toFixed(1)} %`;
const ratio = (v: number, base: number) => (base === 0 ? (v === 0 ? '1.00x' : 'n/a') : `${(v / base).toFixed(2)}x`);

/** The table: every figure, and each as a ratio of the no-limiter row. */
export function formatQuotaTable(rows: readonly { name: string; f: VariantFigures }[]): string {
  const base = rows.find((r) => r.name === 'no limiter (SDK retries)')?.f;
  const head = ['variant', '429s', 'budget use (max)', 'quota use (max)', 'goodput/min', 'SLO goodput/min', 'partial', 'shed', 'wasted tokens', 'p95', 'timeouts'];
  const cells = rows.map(({ name, f }) => [
    name,
    `${f.provider429s}${base ? ` (${ratio(f.provider429s, base.provider429s)})` : ''}`,
    `${pct(f.budgetUse)} (${pct(f.budgetUseMax)})`,
    `${pct(f.quotaUse)} (${pct(f.quotaUseMax)})${base ? ` ${ratio(f.quotaUse, base.quotaUse)}` : ''}`,
    `${f.goodputPerMinute.toFixed(1)}${base ? ` (${ratio(f.goodputPerMinute, base.goodputPerMinute)})` : ''}`,
    `${f.goodputWithinSloPerMinute.toFixed(1)}${base ? ` (${ratio(f.goodputWithinSloPerMinute, base.goodputWithinSloPerMinute)})` : ''}`,
    pct(f.partialRequests),
    pct(f.shedRequests),
    pct(f.wastedTokens),
    `${(f.p95Ms / 1000).toFixed(2)} s${base ? ` (${ratio(f.p95Ms, base.p95Ms)})` : ''}`,
    String(f.timeouts),
  ]);
  const all = [head, ...cells];
  const widths = head.map((_, c) => Math.max(...all.map((line) => line[c].length)));
  return all.map((line) => line.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ')).join('\n');
}

/**
 * The issue's targets, each met or not: quotascope default: 0 provider 429s, >= 95 % of its
 * budget, partial <= 2 %, SLO goodput >= every peer's; quotascope full quota: 0 provider 429s
 * and goodput >= 0.97 x the best peer's.
 */
export function targetVerdict(rows: readonly { name: string; f: VariantFigures }[]): string[] {
  const peers = rows.filter((r) => !r.name.startsWith('quotascope'));
  const best = (key: 'goodputPerMinute' | 'goodputWithinSloPerMinute') =>
    peers.reduce((a, b) => (b.f[key] > (a?.f[key] ?? -1) ? b : a), undefined as (typeof rows)[number] | undefined);
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const lines: string[] = [];
  const own = rows.find((r) => r.name === 'quotascope default');
  if (!own) lines.push('targets of quotascope default: not checked (it did not run)');
  else {
    lines.push(`target quotascope default 0 provider 429s: ${own.f.provider429s === 0 ? 'met' : `NOT met (${own.f.provider429s})`}`);
    lines.push(`target quotascope default >= 95 % of the budget used as the provider counts it: ${met(own.f.budgetUse >= 0.95)} (${pct(own.f.budgetUse)})`);
    lines.push(`target quotascope default partial <= 2 %: ${met(own.f.partialRequests <= 0.02)} (${pct(own.f.partialRequests)})`);
    const slo = best('goodputWithinSloPerMinute');
    if (slo) {
      lines.push(
        `target quotascope default SLO goodput >= every peer's: ${met(own.f.goodputWithinSloPerMinute >= slo.f.goodputWithinSloPerMinute)} ` +
          `(${own.f.goodputWithinSloPerMinute.toFixed(1)}/min vs best peer ${slo.name} ${slo.f.goodputWithinSloPerMinute.toFixed(1)}/min)`,
      );
    }
  }
  const full = rows.find((r) => r.name === 'quotascope full quota');
  if (full) {
    lines.push(`target quotascope full quota 0 provider 429s: ${full.f.provider429s === 0 ? 'met' : `NOT met (${full.f.provider429s})`}`);
    const peer = best('goodputPerMinute');
    if (peer) {
      lines.push(
        `target quotascope full quota goodput >= 0.97 x the best peer's: ${met(full.f.goodputPerMinute >= 0.97 * peer.f.goodputPerMinute)} ` +
          `(${full.f.goodputPerMinute.toFixed(1)}/min vs ${peer.name} ${peer.f.goodputPerMinute.toFixed(1)}/min)`,
      );
    }
  }
  return lines;
}

/** AIMD's convergence and recovery, in windows, from the timeline run's per-window record. */
export function aimdWindows(windows: VariantResult['windows'], stepWindow: number, fleetBudget: number) {
  const calm = (w: (typeof windows)[number]) => w.rateLimited <= Math.max(1, 0.02 * (w.requests + w.rateLimited));
  let converged: number | undefined;
  for (let k = 0; k < Math.min(stepWindow, windows.length); k++) {
    if (windows.slice(k, stepWindow).every(calm)) {
      converged = k;
      break;
    }
  }
  let recovered: number | undefined;
  for (let j = stepWindow; j < windows.length; j++) {
    if (windows[j].tokens >= 0.9 * fleetBudget) {
      recovered = j - stepWindow;
      break;
    }
  }
  return { converged, recovered };
}

export async function runQuotaBench(options: QuotaBenchOptions = {}): Promise<BenchRow[]> {
  const o = {
    windowMs: options.windowMs ?? 6_000,
    loadWindows: options.loadWindows ?? 10,
    quotaTokensPerWindow: options.quotaTokensPerWindow ?? 100_000,
    inputTokensPerCall: options.inputTokensPerCall ?? 1_000,
    outputTokensPerCall: options.outputTokensPerCall ?? 80,
    callMs: options.callMs ?? 800,
    overload: options.overload ?? 1.3,
    replicas: options.replicas ?? 3,
  };
  const variants = options.variants ?? VARIANTS;
  setLogLevel(LogLevel.ERROR); // ADK logs every model request at INFO
  const log = options.log ?? ((line: string) => process.stderr.write(`[bench] quota: ${line}\n`));
  const shape = benchShape(o);
  const quota = o.quotaTokensPerWindow;
  log(
    `window ${o.windowMs} ms; plan: ${shape.sustainedPerWindow.toFixed(1)} requests/window sustained, demand ${shape.demandPerWindow.toFixed(1)} ` +
      `(bursts of ${shape.burstUsers} every 3 windows), ${shape.plan.perReplica.permits} permits/replica, maxWait ${shape.maxWaitMs} ms`,
  );
  const needsRedis = variants.includes('quotascope central');
  const redis = needsRedis ? await startRedisServer() : undefined;
  const results: { name: VariantName; result: VariantResult; f: VariantFigures }[] = [];
  let aimd: { result: VariantResult; stepWindow: number } | undefined;
  try {
    const settings = {
      windowMs: o.windowMs,
      fleetBudgetTokens: shape.fleetBudgetTokens,
      quotaTokens: quota,
      replicas: o.replicas,
      permits: shape.plan.perReplica.permits,
      maxWaitMs: shape.maxWaitMs,
      // What the agent service is told by `start`: the mock's call time, and the calls' input tokens.
      expectedCallMs: o.callMs,
      expectedTokensPerCall: o.inputTokensPerCall,
    };
    const base: Omit<VariantRun, 'variant'> = {
      settings,
      mock: shape.mock(quota),
      arrivals: shape.arrivals,
      loadMs: shape.loadMs,
      graceMs: shape.graceMs,
      inputTokensPerCall: o.inputTokensPerCall,
      requestDeadlineMs: shape.requestDeadlineMs,
    };
    for (const variant of variants) {
      log(`${variant}: running ${(shape.loadMs / 1000).toFixed(0)} s of load…`);
      const result = await runVariant({ ...base, variant }, redis?.url);
      const f = figuresOf(result, shape.fleetBudgetTokens, quota);
      results.push({ name: variant, result, f });
      log(`${variant}: ${result.requests} requests, ${result.okRequests} whole, ${f.provider429s} provider 429s, budget use ${pct(f.budgetUse)}`);
    }
    if (options.aimdTimeline ?? true) {
      const windows = o.loadWindows * 2;
      const stepWindow = o.loadWindows;
      const loadMs = windows * o.windowMs;
      const arrivals = [...shape.arrivals, ...shape.arrivals.map((at) => at + shape.loadMs)];
      const mock: MockShape = {
        ...shape.mock(Math.round(quota * 0.6)),
        timeline: [{ at: (stepWindow * o.windowMs) / 1000, set: { tokensPerMinute: quota } }],
      };
      log(`AIMD timeline: ${(loadMs / 1000).toFixed(0)} s, quota ${Math.round(quota * 0.6)} then ${quota} tokens/window from window ${stepWindow}…`);
      const result = await runVariant({ ...base, variant: 'quotascope adaptive', mock, arrivals, loadMs }, undefined);
      // The windows wholly before the raise (the mock's windows are aligned to its clock, the step to the config).
      const raisedAt = result.configuredAt + stepWindow * o.windowMs;
      aimd = { result, stepWindow: result.windows.filter((w) => w.start + o.windowMs <= raisedAt).length };
    }
  } finally {
    await redis?.close();
  }

  const rows: BenchRow[] = results.map(({ name, result, f }) => ({
    group: QUOTA_GROUP,
    name,
    baseline: name === 'no limiter (SDK retries)' || (!variants.includes('no limiter (SDK retries)') && name === variants[0]),
    // Goodput: whole user requests per second of load (a floor keeps a zero-goodput row valid).
    opsPerSec: Math.max(1e-9, f.goodputPerMinute / 60),
    extra: {
      provider429s: f.provider429s,
      budgetUse: round(f.budgetUse),
      budgetUseMax: round(f.budgetUseMax),
      quotaUse: round(f.quotaUse),
      quotaUseMax: round(f.quotaUseMax),
      goodputPerMinute: round(f.goodputPerMinute),
      p95Ms: Math.round(f.p95Ms),
      timeouts: f.timeouts,
      requests: result.requests,
      wholeRequests: result.okRequests,
      wholeInLoad: result.wholeInLoad,
      cutOff: result.cutOff,
      windowMs: o.windowMs,
      servedPerWindow: round(f.servedPerWindow),
      partialRequests: round(f.partialRequests),
      wastedTokens: round(f.wastedTokens),
      goodputWithinSloPerMinute: round(f.goodputWithinSloPerMinute),
      shedRequests: round(f.shedRequests),
      requestDeadlineMs: shape.requestDeadlineMs,
      // The tokens the provider counted in each window wholly inside the load.
      windowTokens: result.windows.map((w) => w.tokens).join(' '),
      plannedServedPerWindow: round(name === 'quotascope per-call' ? shape.plan.overload.servedUserRequestsPerMinute : shape.plan.admission.servedUserRequestsPerMinute),
    },
  }));
  const table = formatQuotaTable(results.map(({ name, f }) => ({ name, f })));
  const verdict = targetVerdict(results.map(({ name, f }) => ({ name, f })));
  const deadline = `request deadline ${(shape.requestDeadlineMs / 1000).toFixed(1)} s (${REQUEST_DEADLINE_MS / 1000} s compressed ${60_000 / o.windowMs}x): SLO goodput counts whole requests that ended within it`;
  const out = [`quota: ${QUOTA_GROUP} (ratios against the no-limiter row); ${deadline}`, table, ...verdict];
  // Plan vs measured: request admission serves what the budget sustains whole; per-call
  // admission serves the budget's share of the calls (whole-request equivalents).
  const planned = { 'quotascope default': shape.plan.admission.servedUserRequestsPerMinute, 'quotascope per-call': shape.plan.overload.servedUserRequestsPerMinute };
  for (const [name, value] of Object.entries(planned)) {
    const row = results.find((r) => r.name === name);
    if (!row) continue;
    const error = (row.f.servedPerWindow - value) / value;
    out.push(
      `plan vs measured (${name}): ${value.toFixed(2)} user requests/window planned (whole-request equivalents), ` +
        `${row.f.servedPerWindow.toFixed(2)} measured (${error >= 0 ? '+' : ''}${(error * 100).toFixed(1)} %)`,
    );
  }
  let aimdTitle = '';
  if (aimd) {
    const { result, stepWindow } = aimd;
    const { converged, recovered } = aimdWindows(result.windows, stepWindow, shape.fleetBudgetTokens);
    const f = figuresOf(result, shape.fleetBudgetTokens, quota);
    const convergence = converged === undefined ? '429s never fell to ~0 before the raise' : `429s ~0 after ${converged} window(s)`;
    const recovery = recovered === undefined ? 'never back to >= 90 % of the budget' : `back to >= 90 % of the budget ${recovered} window(s) after the raise`;
    aimdTitle = `AIMD: ${convergence}; ${recovery}`;
    rows.push({
      group: AIMD_GROUP,
      name: 'quotascope adaptive',
      baseline: true,
      opsPerSec: Math.max(1e-9, f.goodputPerMinute / 60),
      extra: {
        provider429s: f.provider429s,
        convergedAfterWindows: converged ?? -1,
        recoveredAfterWindows: recovered ?? -1,
        rateLimitedPerWindow: result.windows.map((w) => w.rateLimited).join(' '),
        tokensPerWindow: result.windows.map((w) => w.tokens).join(' '),
        permitsPerWindow: result.windows.map((w) => w.permits ?? '-').join(' '),
        tokenLimitPerWindow: result.windows.map((w) => w.tokenLimit ?? '-').join(' '),
        goodputPerMinute: round(f.goodputPerMinute),
        stepWindow,
      },
    });
    out.push(aimdTitle);
    out.push(`  429s per window:   ${result.windows.map((w) => w.rateLimited).join(' ')}`);
    out.push(`  permits (fleet):   ${result.windows.map((w) => w.permits ?? '-').join(' ')}`);
    out.push(`  token limit/window (fleet): ${result.windows.map((w) => w.tokenLimit ?? '-').join(' ')}`);
    out.push(`  quota use:         ${result.windows.map((w, i) => `${Math.round((100 * w.tokens) / (i < stepWindow ? quota * 0.6 : quota))}%`).join(' ')}`);
  }
  (options.print ?? ((text: string) => process.stdout.write(text)))(`${out.join('\n')}\n\n`);
  const plotPath = options.plotPath === undefined ? join(here, 'results', 'quota.svg') : options.plotPath;
  if (plotPath) {
    const svg = quotaPlot(
      `quotascope quota benchmark: ${o.replicas} replicas, demand ${o.overload}x the budget, ${o.windowMs / 1000} s windows`,
      results.map(({ name, f }) => ({ label: name, quotaUse: f.quotaUse, quotaUseMax: f.quotaUseMax, provider429s: f.provider429s })),
      aimd && {
        stepWindow: aimd.stepWindow,
        title: aimdTitle,
        windows: aimd.result.windows.map((w, i) => ({
          rateLimited: w.rateLimited,
          permits: w.permits,
          quotaUse: w.tokens / (i < aimd.stepWindow ? quota * 0.6 : quota),
        })),
      },
    );
    await mkdir(dirname(plotPath), { recursive: true });
    await writeFile(plotPath, svg);
    log(`plot: ${plotPath}`);
  }
  return rows;
}

const round = (v: number) => Math.round(v * 10_000) / 10_000;

/** The AIMD timeline's name for --variants. */
export const AIMD_TIMELINE = 'adaptive timeline';
/** What `npm run bench -- --only quota --variants a,b` picks from. */
export const variants: readonly string[] = [...VARIANTS, AIMD_TIMELINE];

export default (options: BenchModuleOptions = {}): Promise<BenchRow[]> => {
  const picked = options.variants;
  if (!picked) return runQuotaBench();
  return runQuotaBench({ variants: VARIANTS.filter((v) => picked.includes(v)), aimdTimeline: picked.includes(AIMD_TIMELINE) });
};
