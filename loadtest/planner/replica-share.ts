// Whole requests per replica: under static shares each replica's window admits whole requests
// only, so a replica whose share holds 0.6 of a request serves none, whatever the fleet's
// tokens add up to. Sharing the budget centrally (one window for the fleet) or running fewer
// replicas (larger shares) turns those fractions back into whole requests.
import type { Plan } from './plan.ts';

export interface ShareAdvice {
  /** Whole user requests per minute one central budget (--quota-sharing central) would serve. */
  readonly centralUserRequestsPerMinute: number;
  /** The replica count that serves the most whole requests with static shares, and what it serves. */
  readonly replicas: number;
  readonly replicasUserRequestsPerMinute: number;
}

/** Whole requests per minute `replicas` static shares of the fleet's budget serve. */
function wholeWithReplicas(fleetExact: number, replicas: number): number {
  return replicas * Math.floor(fleetExact / replicas + 1e-9);
}

/**
 * What to do when one request needs more than a replica's share of the budget (each replica
 * serves 0 whole requests while the fleet's budget holds at least one): undefined otherwise
 * (a request larger than the whole budget needs a fix of the quota, prompts or calls).
 */
export function shareAdvice(plan: Plan): ShareAdvice | undefined {
  const perReplica = plan.perReplica;
  const fleetExact = perReplica.userRequestsPerMinuteExact * plan.fleet.replicas;
  if (perReplica.userRequestsPerMinute > 0 || fleetExact < 1 - 1e-9) return undefined;
  let best = { replicas: 1, served: wholeWithReplicas(fleetExact, 1) };
  for (let r = 2; r < plan.fleet.replicas; r++) {
    const served = wholeWithReplicas(fleetExact, r);
    if (served > best.served) best = { replicas: r, served };
  }
  return { centralUserRequestsPerMinute: Math.floor(fleetExact + 1e-9), replicas: best.replicas, replicasUserRequestsPerMinute: best.served };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One line for people: why a replica serves none, and the two ways out. */
export function formatShareAdvice(plan: Plan, advice: ShareAdvice): string {
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const need =
    plan.binding.axis === 'requests'
      ? `${n(plan.tree.callsPerRequest)} calls) needs more than a replica's share (${n(plan.perReplica.requestsPerMinute)} requests/min`
      : `${n(plan.demand.tokensPerCall * plan.tree.callsPerRequest)} tokens) needs more than a replica's share (${n(plan.perReplica.tokensPerMinute)} tokens/min`;
  return (
    `one request (${need}): ` +
    `share the budget centrally (--quota-sharing central: ${advice.centralUserRequestsPerMinute}/min) or run fewer replicas (${plural(advice.replicas, 'replica')}: ${advice.replicasUserRequestsPerMinute}/min)`
  );
}
