// OpenAI chat completions (POST /v1/chat/completions) as the `openai` client uses it: plain and
// streamed (SSE chunks, `data: [DONE]`, usage with stream_options.include_usage), x-ratelimit-*
// headers on every response, 429 rate_limit_exceeded with retry-after.
import type { ServerResponse } from 'node:http';
import { type Request, Router } from 'express';
import { z } from 'zod';
import { type ApiFormat, type CompletionPlan, type CompletionRequest, type RateLimit, sampleArguments, sendJson, serveCompletion, textOf, type ToolCall } from './completion.ts';
import { ClientGone, clientGone, HttpProblem, parseBody, readJsonBody, toolSchema } from './http.ts';
import type { QuotaName } from './quota.ts';
import type { MockState } from './state.ts';
import { tokensForCharacters } from './tokens.ts';

const contentSchema = z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() })), z.null()]);
const messageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: contentSchema.optional(),
});
const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1, 'messages must hold at least one message'),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
  n: z.literal(1).nullable().optional(),
  tools: z
    .array(z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1), parameters: toolSchema.optional() }) }))
    .optional(),
});
type ChatRequest = z.infer<typeof chatRequestSchema>;

function requestText(request: ChatRequest): string {
  let text = '';
  for (const message of request.messages) {
    const content = message.content;
    if (typeof content === 'string') text += content;
    else if (Array.isArray(content)) for (const part of content) text += part.text ?? '';
  }
  return text;
}

function toolCallsFor(request: ChatRequest): ToolCall[] | undefined {
  if (!request.tools || request.tools.length === 0) return undefined;
  if (request.messages[request.messages.length - 1].role === 'tool') return undefined;
  return request.tools.map((tool) => ({
    name: tool.function.name,
    args: sampleArguments(tool.function.parameters),
  }));
}

type ErrorType = 'invalid_request_error' | 'requests' | 'tokens' | 'server_error';

function errorBody(message: string, type: ErrorType, code: string | null, param: string | null = null): object {
  return { error: { message, type, param, code } };
}

export function sendOpenAiError(res: ServerResponse, status: number, message: string, code: string | null = null): void {
  if (status === 413) res.setHeader('connection', 'close');
  sendJson(res, status, errorBody(message, status >= 500 ? 'server_error' : 'invalid_request_error', code));
}

/** OpenAI's reset format: "20ms", "1s", "6m0s", "17.5s". */
export function openAiDuration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const seconds = Math.ceil(ms) / 1000;
  const minutes = Math.floor(seconds / 60);
  const rest = Number((seconds - minutes * 60).toFixed(3));
  return minutes > 0 ? `${minutes}m${rest}s` : `${rest}s`;
}

const QUOTA_WORDS: Record<QuotaName, { words: string; type: 'requests' | 'tokens' }> = {
  requests_per_minute: { words: 'requests per min (RPM)', type: 'requests' },
  tokens_per_minute: { words: 'tokens per min (TPM)', type: 'tokens' },
  requests_per_day: { words: 'requests per day (RPD)', type: 'requests' },
  concurrent: { words: 'concurrent requests', type: 'requests' },
};

/** Random throttling has no quota to compute a delay from; this is what the client is told. */
const THROTTLE_RETRY_MS = 1000;

function usage(plan: CompletionPlan): object {
  const prompt = plan.request.inputTokens;
  return { prompt_tokens: prompt, completion_tokens: plan.outputTokenCount, total_tokens: prompt + plan.outputTokenCount };
}

function finishReason(plan: CompletionPlan): string {
  return plan.request.toolCalls ? 'tool_calls' : plan.truncated ? 'length' : 'stop';
}

function toolCallsJson(plan: CompletionPlan): object[] {
  return (plan.request.toolCalls ?? []).map((call, index) => ({
    index,
    id: `call_${plan.id}_${index}`,
    type: 'function',
    function: { name: call.name, arguments: JSON.stringify(call.args) },
  }));
}

interface OpenAiExtras {
  readonly includeUsage: boolean;
}

const openAiFormat = (state: MockState, extras: WeakMap<CompletionRequest, OpenAiExtras>): ApiFormat => ({
  commonHeaders(res: ServerResponse, request: CompletionRequest) {
    const status = state.quota.status(request.apiKey, request.model, state.config);
    res.setHeader('x-ratelimit-limit-requests', String(status.requests.limit));
    res.setHeader('x-ratelimit-limit-tokens', String(status.tokens.limit));
    res.setHeader('x-ratelimit-remaining-requests', String(status.requests.remaining));
    res.setHeader('x-ratelimit-remaining-tokens', String(status.tokens.remaining));
    res.setHeader('x-ratelimit-reset-requests', openAiDuration(status.requests.resetMs));
    res.setHeader('x-ratelimit-reset-tokens', openAiDuration(status.tokens.resetMs));
  },
  rateLimited(res: ServerResponse, request: CompletionRequest, limit: RateLimit) {
    const org = 'org-mock';
    if (limit.reason === 'random' || limit.retryMs === undefined) {
      res.setHeader('retry-after', String(THROTTLE_RETRY_MS / 1000));
      res.setHeader('retry-after-ms', String(THROTTLE_RETRY_MS));
      const message = `Rate limit reached for ${request.model} in organization ${org}: the service is throttling requests. Please try again in 1s.`;
      sendJson(res, 429, errorBody(message, 'requests', 'rate_limit_exceeded'));
      return;
    }
    const quota = QUOTA_WORDS[limit.reason];
    const requested = quota.type === 'tokens' ? request.inputTokens : 1;
    if (!Number.isFinite(limit.retryMs)) {
      const message = `Request too large for ${request.model} in organization ${org} on ${quota.words}: Limit ${limit.limit}, Requested ${requested}. The input or output tokens must be reduced in order to run successfully.`;
      sendJson(res, 429, errorBody(message, quota.type, 'rate_limit_exceeded'));
      return;
    }
    res.setHeader('retry-after', String(Math.ceil(limit.retryMs / 1000)));
    res.setHeader('retry-after-ms', String(Math.ceil(limit.retryMs)));
    const message = `Rate limit reached for ${request.model} in organization ${org} on ${quota.words}: Limit ${limit.limit}, Requested ${requested}. Please try again in ${openAiDuration(limit.retryMs)}. Visit https://platform.openai.com/account/rate-limits to learn more.`;
    sendJson(res, 429, errorBody(message, quota.type, 'rate_limit_exceeded'));
  },
  serverError(res: ServerResponse, status: 500 | 503) {
    sendOpenAiError(
      res,
      status,
      status === 500
        ? 'The server had an error while processing your request. Sorry about that!'
        : 'The server is overloaded or not ready yet.',
    );
  },
  complete(res: ServerResponse, plan: CompletionPlan) {
    const toolCalls = plan.request.toolCalls ? toolCallsJson(plan) : undefined;
    sendJson(res, 200, {
      id: `chatcmpl-${plan.id}`,
      object: 'chat.completion',
      created: Math.floor(plan.createdMs / 1000),
      model: plan.request.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: toolCalls ? null : plan.text,
            refusal: null,
            ...(toolCalls ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: finishReason(plan),
        },
      ],
      usage: usage(plan),
      system_fingerprint: 'fp_quotascope_mock',
    });
  },
  chunk(plan: CompletionPlan, from: number, to: number, last: boolean) {
    const includeUsage = extras.get(plan.request)?.includeUsage ?? false;
    const base = {
      id: `chatcmpl-${plan.id}`,
      object: 'chat.completion.chunk',
      created: Math.floor(plan.createdMs / 1000),
      model: plan.request.model,
      system_fingerprint: 'fp_quotascope_mock',
    };
    const delta: Record<string, unknown> = from === 0 ? { role: 'assistant' } : {};
    if (plan.request.toolCalls) delta.tool_calls = toolCallsJson(plan);
    else delta.content = textOf(plan, from, to);
    const frame = (body: object) => `data: ${JSON.stringify(body)}\n\n`;
    let out = frame({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: last ? finishReason(plan) : null }],
      ...(includeUsage ? { usage: null } : {}),
    });
    if (last && includeUsage) out += frame({ ...base, choices: [], usage: usage(plan) });
    return out;
  },
  streamError() {
    return `data: ${JSON.stringify(errorBody('The server had an error while processing your request. Sorry about that!', 'server_error', null))}\n\n`;
  },
  streamEnd: 'data: [DONE]\n\n',
});

function apiKeyOf(req: Request): string {
  const match = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  if (!match) {
    throw new HttpProblem(
      401,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  }
  return match[1];
}

export function openAiRouter(state: MockState): Router {
  const router = Router();
  const extras = new WeakMap<CompletionRequest, OpenAiExtras>();
  const format = openAiFormat(state, extras);
  router.post('/v1/chat/completions', async (req, res) => {
    let model = 'unknown';
    try {
      const apiKey = apiKeyOf(req);
      const config = state.config;
      const body = await readJsonBody(req, config.maxBodyBytes);
      const request = parseBody(chatRequestSchema, body, 'chat completion request');
      if (!config.models.includes(request.model)) {
        throw new HttpProblem(404, `The model \`${request.model}\` does not exist or you do not have access to it.`);
      }
      model = request.model;
      const prompt = requestText(request);
      const completion: CompletionRequest = {
        api: 'openai',
        model,
        apiKey,
        prompt,
        inputTokens: tokensForCharacters(prompt.length),
        maxOutputTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
        stream: request.stream === true,
        toolCalls: config.answerToolCalls ? toolCallsFor(request) : undefined,
      };
      extras.set(completion, { includeUsage: request.stream_options?.include_usage === true });
      await serveCompletion(state, req, res, completion, format);
    } catch (error) {
      if (error instanceof ClientGone) return clientGone(state.metrics, 'openai', error);
      if (!(error instanceof HttpProblem)) throw error;
      state.metrics.requests.inc({ api: 'openai', model, status: String(error.status) });
      sendOpenAiError(res, error.status, error.message, error.status === 404 ? 'model_not_found' : null);
    }
  });
  return router;
}
