// The Load test dashboard: what k6 saw (request rate, VUs, latency by scenario and traffic
// class, failures, missing branches) next to what the limiter did, and the agent service's
// own view of the same requests.
import { type DashboardsConfig, selectorsOf } from '../config.ts';
import { agent, k6, limiter as m } from '../metrics.ts';
import { quantile, series, sumOf, sumRate } from '../promql.ts';
import { joinSelectors } from '../selector.ts';
import { maxWaitLines } from './limiter.ts';
import type { DashboardSpec } from './spec.ts';
import { limiterVariables } from './variables.ts';

const ri = '$__rate_interval';
const byClass = ['scenario', 'traffic_class'] as const;
const noK6 = 'k6 writes these series through remote write only while a load test runs';

export function buildLoadtestDashboard(config: DashboardsConfig): DashboardSpec {
  const s = selectorsOf(config);
  const k = s.k6;
  return {
    uid: 'quotascope-loadtest',
    title: 'quotascope / Load test',
    description: 'k6 load against the agent service, overlaid with the limiter acquire time.',
    tags: ['quotascope', 'k6'],
    variables: [
      ...limiterVariables(s),
      { name: 'scenario', label: 'Scenario', metric: k6.httpReqs, labelName: 'scenario', selector: s.k6Scrape || undefined },
    ],
    rows: [
      {
        title: 'k6',
        panels: [
          {
            key: 'k6-request-rate',
            title: 'Request rate by scenario',
            description: 'HTTP requests k6 sent per second, by scenario.',
            unit: 'reqps',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(k6.httpReqs, k, ri, ['scenario']), legend: '{{scenario}}' }],
            quietRunEmpty: noK6,
          },
          {
            key: 'k6-request-outcomes',
            title: 'User requests by outcome (k6)',
            description:
              'User requests per second as k6 counted them: started, and ended served (every branch ok), partial (a branch not ok), shed (429 REQUEST_SHED: refused whole at the door) or failed. Started above the ended ones is requests still running; at the end of a run, the gap is the unfinished ones.',
            unit: 'reqps',
            kind: 'timeseries',
            min: 0,
            targets: [
              { expr: sumRate(k6.requestsStarted, k, ri), legend: 'started' },
              { expr: sumRate(k6.requestOutcomes, k, ri, ['outcome']), legend: '{{outcome}}' },
            ],
            quietRunEmpty: noK6,
          },
          {
            key: 'k6-vus',
            title: 'Virtual users',
            description: 'Active k6 virtual users (simultaneous simulated clients).',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumOf(k6.vus, ''), legend: 'VUs' }],
            quietRunEmpty: noK6,
          },
          {
            key: 'k6-duration',
            title: 'Request duration p95 / p99 by scenario and traffic class',
            description:
              'End-to-end agent request duration as k6 measured it (fan-out included). k6 trend stats are cumulative since the test started, not windowed.',
            unit: 's',
            kind: 'timeseries',
            min: 0,
            span: 24,
            targets: [
              { expr: `max by (scenario, traffic_class) (${series(k6.requestDurationP95, k)})`, legend: '{{scenario}} {{traffic_class}} p95' },
              { expr: `max by (scenario, traffic_class) (${series(k6.requestDurationP99, k)})`, legend: '{{scenario}} {{traffic_class}} p99' },
            ],
            quietRunEmpty: noK6,
          },
          {
            key: 'k6-failure-rate',
            title: 'HTTP failure rate',
            description: 'Share of k6 requests that failed (non-2xx or transport error), cumulative over the run.',
            unit: 'percentunit',
            kind: 'timeseries',
            min: 0,
            max: 1,
            targets: [{ expr: `max by (scenario) (${series(k6.httpReqFailed, k)})`, legend: '{{scenario}}' }],
            quietRunEmpty: noK6,
          },
          {
            key: 'k6-missing-branches',
            title: 'Requests with a missing branch',
            description:
              'Share of agent requests whose answer lacked at least one branch (a reviewer timed out or was rate limited), by scenario and traffic class.',
            unit: 'percentunit',
            kind: 'timeseries',
            min: 0,
            max: 1,
            targets: [{ expr: `max by (${byClass.join(', ')}) (${series(k6.missingBranches, k)})`, legend: '{{scenario}} {{traffic_class}}' }],
            quietRunEmpty: noK6,
          },
          {
            key: 'k6-vs-acquire',
            title: 'Request p95 vs acquire p95',
            description: `k6 request p95 overlaid with the limiter acquire-time p95 and the permit wait the responses reported: queueing shows up in both. Orange and red: each limiter's early-warning line and maxWait.`,
            unit: 's',
            kind: 'timeseries',
            min: 0,
            span: 24,
            targets: [
              { expr: `max(${series(k6.requestDurationP95, k)})`, legend: 'k6 request p95' },
              { expr: `max(${series(k6.permitWaitP95, k)})`, legend: 'k6 permit wait p95' },
              { expr: quantile(0.95, m.acquireDuration, joinSelectors(s.limiterAgent, 'outcome="acquired"'), ri), legend: 'limiter acquire p95 (admitted)' },
              ...maxWaitLines(config, s.limiter),
            ],
            quietRunEmpty: `${noK6} (the limiter series is there in any run)`,
          },
          {
            key: 'k6-branch-outcomes',
            title: 'Branch outcomes seen by k6',
            description: 'Branches of the answered requests by outcome (ok, timeout, rate_limited, budget_unavailable, error), per second.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(k6.branchOutcomes, k, ri, ['outcome']), legend: '{{outcome}}' }],
            quietRunEmpty: noK6,
          },
        ],
      },
      {
        title: 'Agent service',
        panels: [
          {
            key: 'agent-requests',
            title: 'Agent requests by tree and status',
            description: 'Requests the agent service answered per second, by agent tree and status.',
            unit: 'reqps',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(agent.requests, s.agentService, ri, ['tree', 'status']), legend: '{{tree}} {{status}}' }],
          },
          {
            key: 'agent-duration',
            title: 'Agent request duration p95 by tree',
            description: 'Server-side request duration p95 per agent tree.',
            unit: 's',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: quantile(0.95, agent.requestDuration, s.agentService, ri, ['tree']), legend: '{{tree}}' }],
          },
          {
            key: 'agent-branch-outcomes',
            title: 'Branch outcomes by tree',
            description: 'Branches per second by tree and outcome: ok, timeout, rate_limited, budget_unavailable, error.',
            unit: 'ops',
            kind: 'timeseries',
            min: 0,
            targets: [{ expr: sumRate(agent.branchOutcomes, s.agentService, ri, ['tree', 'outcome']), legend: '{{tree}} {{outcome}}' }],
          },
          {
            key: 'agent-model-calls',
            title: 'Model calls per request',
            description: 'Mean number of model calls one agent request fans out into, per tree (5 for the review tree).',
            unit: 'short',
            kind: 'timeseries',
            min: 0,
            targets: [
              {
                expr: `${sumRate(`${agent.modelCallsPerRequest}_sum`, s.agentService, ri, ['tree'])} / ${sumRate(`${agent.modelCallsPerRequest}_count`, s.agentService, ri, ['tree'])}`,
                legend: '{{tree}}',
              },
            ],
          },
        ],
      },
    ],
  };
}
