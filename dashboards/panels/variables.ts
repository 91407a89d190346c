// The label variables every dashboard offers (besides the datasource): job, instance,
// limiter and agent, each narrowed by the ones before it.
import { jobs, limiter } from '../config.ts';
import type { VariableSpec } from './spec.ts';

export const limiterVariables: readonly VariableSpec[] = [
  { name: 'job', label: 'Job', metric: limiter.permitsInUse, labelName: 'job', selector: `job="${jobs.agent}"` },
  { name: 'instance', label: 'Replica', metric: limiter.permitsInUse, labelName: 'instance', selector: 'job=~"$job"' },
  {
    name: 'limiter',
    label: 'Limiter',
    metric: limiter.permitsInUse,
    labelName: 'limiter',
    selector: 'job=~"$job", instance=~"$instance"',
  },
  {
    name: 'agent',
    label: 'Agent',
    metric: limiter.calls,
    labelName: 'agent',
    selector: 'job=~"$job", instance=~"$instance", limiter=~"$limiter"',
  },
];
