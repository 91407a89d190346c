// Every dashboard spec, in the order they are generated.
import { limiterDashboard } from './limiter.ts';
import { loadtestDashboard } from './loadtest.ts';
import { mockProviderDashboard } from './mockProvider.ts';
import type { DashboardSpec } from './spec.ts';

export const dashboards: readonly DashboardSpec[] = [limiterDashboard, loadtestDashboard, mockProviderDashboard];
