// Public entry of the agent service: start it programmatically, or read its contracts.
export { type AccessLog, AccessLogError, type AccessLogRecord, openAccessLog } from './access-log.ts';
export {
  type AgentServiceOptions,
  type AgentServiceOptionsInput,
  agentServiceOptionsSchema,
} from './config.ts';
export { type AgentMetrics, agentMetrics, createAgentMetrics } from './metrics.ts';
export { BRANCH_OUTCOMES, type BranchOutcome, type BranchResult, collectBranchOutcomes } from './outcomes.ts';
export { ProviderGemini } from './provider-model.ts';
export { type RunRequest, runRequestSchema } from './request-schema.ts';
export { type AgentService, type StartAgentServiceExtras, startAgentService } from './service.ts';
export { startTracing } from './tracing.ts';
export { type AgentModuleSpec, AgentModuleError, type LoadedAgentModule, loadAgentModule } from './agent-module.ts';
export { type ServeOptions, type ServeOptionsInput, serveOptionsSchema } from './serve/options.ts';
export { type ServedAgent, startServe } from './serve/server.ts';
export { type AgentTreeNode, AgentTreeError, eventAuthorsOf, llmAgentsOf, walkAgentTree } from '../instrumentation/tree/tree-walk.ts';
export { sampleTreeShapes } from './sample-shapes.ts';
export { TREE_NAMES, type TreeName, type TreeShape } from './tree-shapes.ts';
export { buildTree } from './trees.ts';
