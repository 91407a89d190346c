// What the verdict says when the provider cut its quota mid-run: the 429s and sheds that
// followed were the provider's doing, not the plan's.
import { quotaAmount as amount, quotaName } from './markers.ts';

/** A change of one provider quota, `secondsIn` after the run started. */
export interface QuotaChangeIn {
  secondsIn: number;
  quota: string;
  from: number;
  to: number;
}

/**
 * `the provider cut its tokens/min quota mid-run: 1,000,000 → 500,000 at +120 s, back to
 * 1,000,000 at +240 s`, one clause per quota that was cut; '' when no quota was cut.
 */
export function quotaCutsLine(changes: readonly QuotaChangeIn[]): string {
  const clauses: string[] = [];
  const quotas = [...new Set(changes.map((c) => c.quota))].sort();
  for (const quota of quotas) {
    const own = changes.filter((c) => c.quota === quota).sort((a, b) => a.secondsIn - b.secondsIn);
    if (!own.some((c) => c.to < c.from)) continue;
    const steps = own.map((c, i) => `${i > 0 && c.to >= own[0].from ? 'back to ' : ''}${i === 0 ? `${amount(c.from)} → ` : ''}${amount(c.to)} at +${Math.round(c.secondsIn)} s`);
    clauses.push(`the provider cut its ${quotaName(quota)} quota mid-run: ${steps.join(', ')}`);
  }
  return clauses.join('; ');
}
