// Every dashboard spec for a config, in the order they are generated.
import type { DashboardsConfig } from '../config.ts';
import { buildLimiterDashboard } from './limiter.ts';
import { buildLoadtestDashboard } from './loadtest.ts';
import { buildMockProviderDashboard } from './mock-provider.ts';
import type { DashboardSpec } from './spec.ts';

export function buildDashboards(config: DashboardsConfig): DashboardSpec[] {
  const mockProvider = buildMockProviderDashboard(config);
  return [buildLimiterDashboard(config), buildLoadtestDashboard(config), ...(mockProvider ? [mockProvider] : [])];
}
