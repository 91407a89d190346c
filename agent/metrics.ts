// The agent service's own metrics (the limiter's come from instrumentation/). Definitions
// are exported so dashboards and tests build their queries from them.
import { Counter, Histogram, type Registry } from 'prom-client';
import type { MetricDefinition } from '../instrumentation/index.ts';

/** Request buckets in seconds: an uncontended review takes 2 x ~8 s; queueing adds up to maxWait. */
export const REQUEST_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 12, 16, 20, 30, 45, 60, 90, 120] as const;
export const MODEL_CALLS_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 70] as const;

export const agentMetrics = {
  requests: {
    name: 'agent_requests_total',
    help: 'Agent run requests answered, by tree and HTTP status code (499 = client went away, 503 = aborted by shutdown).',
    type: 'counter',
    labelNames: ['tree', 'status'],
  },
  requestDuration: {
    name: 'agent_request_duration_seconds',
    help: 'Time to answer an agent run request (queueing for permits included).',
    type: 'histogram',
    labelNames: ['tree'],
    buckets: REQUEST_SECONDS_BUCKETS,
  },
  branchOutcomes: {
    name: 'agent_branch_outcomes_total',
    help: 'Branches (agents) of finished runs by outcome: ok, timeout, rate_limited, budget_unavailable, error, missing.',
    type: 'counter',
    labelNames: ['tree', 'branch', 'outcome'],
  },
  modelCallsPerRequest: {
    name: 'agent_model_calls_per_request',
    help: 'Model calls one request made through the limiter (its fan-out).',
    type: 'histogram',
    labelNames: ['tree'],
    buckets: MODEL_CALLS_BUCKETS,
  },
} as const satisfies Record<string, MetricDefinition>;

export interface AgentMetrics {
  requests: Counter<'tree' | 'status'>;
  requestDuration: Histogram<'tree'>;
  branchOutcomes: Counter<'tree' | 'branch' | 'outcome'>;
  modelCallsPerRequest: Histogram<'tree'>;
}

export function createAgentMetrics(registry: Registry): AgentMetrics {
  const registers = [registry];
  const counter = <L extends string>(d: MetricDefinition<L>) => new Counter<L>({ name: d.name, help: d.help, labelNames: [...d.labelNames], registers });
  const histogram = <L extends string>(d: MetricDefinition<L> & { readonly buckets: readonly number[] }) =>
    new Histogram<L>({ name: d.name, help: d.help, labelNames: [...d.labelNames], buckets: [...d.buckets], registers });
  return {
    requests: counter(agentMetrics.requests),
    requestDuration: histogram(agentMetrics.requestDuration),
    branchOutcomes: counter(agentMetrics.branchOutcomes),
    modelCallsPerRequest: histogram(agentMetrics.modelCallsPerRequest),
  };
}
