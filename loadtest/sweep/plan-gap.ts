// The measured knee beside the plan ("plan 27.0/min, measured 26.4 ± 0.5/min (−2.2 %)") and,
// where they differ by more than the tolerance, which of the planner's inputs the run did not
// bear out: tokens per call, call time, or width (model calls per request). Pure.

export interface PlanQuantities {
  /** Counted tokens per model call. */
  readonly tokensPerCall: number | undefined;
  /** Seconds per model call. */
  readonly callSeconds: number | undefined;
  /** Model calls per user request (the tree's width and depth together). */
  readonly callsPerRequest: number | undefined;
}

export interface OffQuantity {
  readonly quantity: 'tokens per call' | 'call time' | 'width (calls per request)';
  readonly planned: number;
  readonly measured: number;
  readonly relativeError: number;
}

export interface PlanGap {
  readonly plannedPerMinute: number;
  readonly measuredPerMinute: number;
  readonly plusMinus: number;
  /** (measured - planned) / planned. */
  readonly relativeError: number;
  readonly differs: boolean;
  /** The planned inputs the run measured off by more than the tolerance, largest first. */
  readonly off: readonly OffQuantity[];
  /** One line for the console and the report. */
  readonly line: string;
  /** Why they differ, when they do (one line). */
  readonly why?: string;
}

const signed = (x: number, digits = 1) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(digits)} %`;
const num = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(x >= 100 ? 0 : 2));

export function planGap(plannedPerMinute: number, measuredPerMinute: number, plusMinus: number, planned: PlanQuantities, measured: PlanQuantities, tolerance: number): PlanGap {
  const relativeError = plannedPerMinute > 0 ? (measuredPerMinute - plannedPerMinute) / plannedPerMinute : 0;
  const differs = Math.abs(relativeError) > tolerance;
  const names: [keyof PlanQuantities, OffQuantity['quantity']][] = [
    ['tokensPerCall', 'tokens per call'],
    ['callSeconds', 'call time'],
    ['callsPerRequest', 'width (calls per request)'],
  ];
  const off: OffQuantity[] = [];
  for (const [key, quantity] of names) {
    const p = planned[key];
    const m = measured[key];
    if (p === undefined || m === undefined || !(p > 0)) continue;
    const error = (m - p) / p;
    if (Math.abs(error) > tolerance) off.push({ quantity, planned: p, measured: m, relativeError: error });
  }
  off.sort((a, b) => Math.abs(b.relativeError) - Math.abs(a.relativeError));
  const line = `plan ${plannedPerMinute.toFixed(1)}/min, measured ${measuredPerMinute.toFixed(1)} ± ${plusMinus.toFixed(1)}/min (${signed(relativeError)})`;
  let why: string | undefined;
  if (differs) {
    why =
      off.length > 0
        ? `the plan is off on ${off.map((o) => `${o.quantity}: planned ${num(o.planned)}, measured ${num(o.measured)} (${signed(o.relativeError)})`).join('; ')}`
        : `no planned input is off by more than ${(tolerance * 100).toFixed(0)} % (tokens per call, call time, width as measured): the gap is in how the limiters admit whole requests, not in the tree's figures`;
  }
  return { plannedPerMinute, measuredPerMinute, plusMinus, relativeError, differs, off, line, ...(why ? { why } : {}) };
}
