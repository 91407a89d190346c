import { BaseLlm, LlmAgent, InMemoryRunner, Workflow, JoinNode, setLogLevel, LogLevel, isFinalResponse, stringifyContent } from '@google/adk';
import type { LlmRequest, LlmResponse } from '@google/adk';
setLogLevel(LogLevel.ERROR);
const t0 = Date.now();
class Fake extends BaseLlm {
  constructor() { super({ model: 'fake' }); }
  async *generateContentAsync(req: LlmRequest): AsyncGenerator<LlmResponse, void> {
    const name = req.config?.labels?.adk_agent_name;
    const si = JSON.stringify(req.config?.systemInstruction).slice(-200);
    console.log('start', name, Date.now() - t0, name === 'synthesizer' ? si : '');
    await new Promise(r => setTimeout(r, 200));
    if (name === 'reviewer_2') throw new Error(JSON.stringify({ code: 'RATE_LIMIT_TIMEOUT', message: 'x' }));
    console.log('end', name, Date.now() - t0);
    yield { content: { role: 'model', parts: [{ text: `out of ${name}` }] }, usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2 } };
  }
  async connect(): Promise<never> { throw new Error('no'); }
}
const model = new Fake();
const reviewers = [1,2,3,4].map(i => new LlmAgent({ name:`reviewer_${i}`, model, instruction:`review ${i}`, outputKey:`review_${i}` }));
const synth = new LlmAgent({ name:'synthesizer', model, instruction:'Combine {review_1?} | {review_2?} | {review_3?} | {review_4?}' });
const join = new JoinNode({ name: 'join' });
const wf = new Workflow({ name: 'review_workflow', edges: [['START', reviewers, join, synth]] });
const runner = new InMemoryRunner({ agent: wf as any, appName: 'p' });
for await (const ev of runner.runEphemeral({ userId: 'u', newMessage: { role: 'user', parts: [{ text: 'doc' }] }, runConfig: { maxLlmCalls: 10 } })) {
  console.log('EV', ev.author, ev.branch, ev.errorCode, isFinalResponse(ev), stringifyContent(ev).slice(0, 60), JSON.stringify(ev.actions?.stateDelta));
}
