// The label variables every dashboard offers (besides the datasource): job, instance,
// limiter and agent, each listing values from the configured selector and narrowed by the
// ones before it.
import type { Selectors } from '../config.ts';
import { limiter } from '../metrics.ts';
import { joinSelectors } from '../selector.ts';
import type { VariableSpec } from './spec.ts';

export function limiterVariables(s: Selectors): VariableSpec[] {
  const scrape = s.agentScrape;
  return [
    { name: 'job', label: 'Job', metric: limiter.permitsInUse, labelName: 'job', selector: scrape },
    { name: 'instance', label: 'Replica', metric: limiter.permitsInUse, labelName: 'instance', selector: joinSelectors(scrape, 'job=~"$job"') },
    {
      name: 'limiter',
      label: 'Limiter',
      metric: limiter.permitsInUse,
      labelName: 'limiter',
      selector: joinSelectors(scrape, 'job=~"$job", instance=~"$instance"'),
    },
    {
      name: 'agent',
      label: 'Agent',
      metric: limiter.calls,
      labelName: 'agent',
      selector: joinSelectors(scrape, 'job=~"$job", instance=~"$instance", limiter=~"$limiter"'),
    },
  ];
}
