// The capacity planner, importable: plan(input) → Plan. The CLI (cli.ts) and the load-test
// report (plan vs measured) both build on this entry.
export { plan } from './plan.ts';
export type { Plan, PlannedTree, BurstWave, QuotaAxis } from './plan.ts';
export { planInputSchema, parsePlanInput, planInputIssues, PlanInputError } from './input.ts';
export type { PlanInput, ValidPlanInput, PlanInputField, PlanInputIssue } from './input.ts';
export type { Fix, FixKind } from './fixes.ts';
export { examples, reviewAgentExample } from './examples.ts';
export type { ExampleName } from './examples.ts';
export { formatPlan } from './format.ts';
