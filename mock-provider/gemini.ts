// The Gemini REST API (generativelanguage.googleapis.com) as @google/genai and ADK use it:
// POST /{v1,v1beta}/models/{model}:generateContent | :streamGenerateContent?alt=sse | :countTokens.
// The same methods on Vertex AI's routes (aiplatform.googleapis.com), where the quota is the
// project's: /{v1,v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{model}:…, and
// in express mode (an API key, no project) /{v1,v1beta1}/publishers/google/models/{model}:….
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { type ApiFormat, type CompletionPlan, type CompletionRequest, type RateLimit, sampleArguments, sendJson, serveCompletion, textOf, type ToolCall } from './completion.ts';
import { countTokensRequestSchema, type GenerateRequest, parseGenerateRequest } from './gemini-request.ts';
import { ClientGone, clientGone, HttpProblem, parseBody, readJsonBody } from './http.ts';
import type { QuotaName } from './quota.ts';
import type { MockState } from './state.ts';
import { tokensForCharacters } from './tokens.ts';

/** All text of the request, system instruction first: what the token rule counts. */
export function requestText(request: Pick<GenerateRequest, 'contents' | 'systemInstruction'>): string {
  let text = '';
  for (const part of request.systemInstruction?.parts ?? []) text += part.text ?? '';
  for (const content of request.contents) for (const part of content.parts) text += part.text ?? '';
  return text;
}


/** Function calls to answer with: every declared function, unless the last turn already holds function results. */
export function toolCallsFor(request: GenerateRequest): ToolCall[] | undefined {
  const declarations = (request.tools ?? []).flatMap((tool) => tool.functionDeclarations ?? []);
  if (declarations.length === 0) return undefined;
  const last = request.contents[request.contents.length - 1];
  if (last.parts.some((part) => 'functionResponse' in part)) return undefined;
  return declarations.map((d) => ({
    name: d.name,
    args: sampleArguments(d.parametersJsonSchema ?? d.parameters),
  }));
}

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

function errorBody(code: number, message: string, details?: unknown[]): object {
  return { error: { code, message, status: STATUS_NAMES[code] ?? 'UNKNOWN', ...(details ? { details } : {}) } };
}

export function sendGeminiError(res: ServerResponse, code: number, message: string, details?: unknown[]): void {
  if (code === 413) res.setHeader('connection', 'close');
  sendJson(res, code, errorBody(code, message, details));
}

/** A protobuf JSON Duration: seconds with 0, 3, 6 or 9 fractional digits, e.g. "45.837906927s". */
export function protobufDuration(ms: number): string {
  const totalNanos = Math.max(0, Math.round(ms * 1e6));
  const seconds = Math.floor(totalNanos / 1e9);
  const nanos = totalNanos - seconds * 1e9;
  if (nanos === 0) return `${seconds}s`;
  const digits = nanos % 1e6 === 0 ? 3 : nanos % 1e3 === 0 ? 6 : 9;
  const fraction = String(nanos).padStart(9, '0').slice(0, digits);
  return `${seconds}.${fraction}s`;
}

/** Quota metric and id as Gemini names them in QuotaFailure violations. */
const QUOTA_IDS: Record<QuotaName, { metric: string; id: string }> = {
  requests_per_minute: {
    metric: 'generativelanguage.googleapis.com/generate_content_paid_tier_requests',
    id: 'GenerateRequestsPerMinutePerProjectPerModel',
  },
  tokens_per_minute: {
    metric: 'generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count',
    id: 'GenerateContentPaidTierInputTokensPerModelPerMinute',
  },
  requests_per_day: {
    metric: 'generativelanguage.googleapis.com/generate_content_paid_tier_requests',
    id: 'GenerateRequestsPerDayPerProjectPerModel',
  },
  concurrent: {
    metric: 'generativelanguage.googleapis.com/generate_content_concurrent_requests',
    id: 'ConcurrentGenerateRequestsPerProjectPerModel',
  },
};

function usage(plan: CompletionPlan, outputTokens: number): object {
  const prompt = plan.request.inputTokens;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: outputTokens,
    totalTokenCount: prompt + outputTokens,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
}

function response(plan: CompletionPlan, parts: object[], finish: boolean, outputTokens: number): object {
  const finishReason = plan.truncated ? 'MAX_TOKENS' : 'STOP';
  return {
    candidates: [{ content: { role: 'model', parts }, ...(finish ? { finishReason } : {}), index: 0 }],
    usageMetadata: usage(plan, outputTokens),
    modelVersion: plan.request.model,
    responseId: plan.id,
  };
}

function answerParts(plan: CompletionPlan, from: number, to: number): object[] {
  if (plan.request.toolCalls) return plan.request.toolCalls.map((call) => ({ functionCall: call }));
  return [{ text: textOf(plan, from, to) }];
}

/** Which Google API a route belongs to: the wire format is one, the 429 body and the quota key differ. */
type Backend = 'gemini' | 'vertex';

// Vertex AI's 429 names no quota and gives no RetryInfo.
const VERTEX_EXHAUSTED =
  'Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.';

const geminiFormat = (state: MockState, backend: Backend): ApiFormat => ({
  rateLimited(res: ServerResponse, request: CompletionRequest, limit: RateLimit) {
    if (backend === 'vertex') {
      sendGeminiError(res, 429, VERTEX_EXHAUSTED);
      return;
    }
    if (limit.reason === 'random' || limit.retryMs === undefined) {
      sendGeminiError(res, 429, 'Resource has been exhausted (e.g. check quota).');
      return;
    }
    const quota = QUOTA_IDS[limit.reason];
    const never = !Number.isFinite(limit.retryMs);
    const retryDelay = protobufDuration(limit.retryMs);
    const details: object[] = [
      {
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [
          {
            quotaMetric: quota.metric,
            quotaId: quota.id,
            quotaDimensions: { location: 'global', model: request.model },
            quotaValue: String(limit.limit),
          },
        ],
      },
      {
        '@type': 'type.googleapis.com/google.rpc.Help',
        links: [{ description: 'Learn more about Gemini API quotas', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' }],
      },
    ];
    if (!never) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay });
    const message =
      'You exceeded your current quota, please check your plan and billing details. For more information on this error, ' +
      'head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n' +
      `* Quota exceeded for metric: ${quota.metric}, limit: ${limit.limit}, model: ${request.model}\n` +
      (never ? 'This request alone exceeds the limit.' : `Please retry in ${retryDelay}.`);
    if (!never && state.config.geminiRetryAfterHeader) res.setHeader('retry-after', String(Math.ceil(limit.retryMs / 1000)));
    sendGeminiError(res, 429, message, details);
  },
  serverError(res: ServerResponse, status: 500 | 503) {
    sendGeminiError(
      res,
      status,
      status === 500 ? 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting' : 'The model is overloaded. Please try again later.',
    );
  },
  complete(res: ServerResponse, plan: CompletionPlan) {
    sendJson(res, 200, response(plan, answerParts(plan, 0, plan.outputTokenCount), true, plan.outputTokenCount));
  },
  chunk(plan: CompletionPlan, from: number, to: number, last: boolean) {
    const sent = last ? plan.outputTokenCount : to;
    return `data: ${JSON.stringify(response(plan, answerParts(plan, from, to), last, sent))}\r\n\r\n`;
  },
  streamError() {
    return `data: ${JSON.stringify(errorBody(500, 'An internal error has occurred. The stream was interrupted.'))}\r\n\r\n`;
  },
  streamEnd: '',
});

/** The query string, parsed the way express's default ("simple") query parser does. */
function queryOf(req: IncomingMessage): Record<string, string | string[] | undefined> {
  const url = req.url ?? '';
  const mark = url.indexOf('?');
  return mark < 0 ? {} : parseQuery(url.slice(mark + 1));
}

function apiKeyOf(req: IncomingMessage): string {
  const header = req.headers['x-goog-api-key'];
  let key = typeof header === 'string' ? header : '';
  if (key === '') {
    const fromQuery = queryOf(req).key;
    key = typeof fromQuery === 'string' ? fromQuery : '';
  }
  if (key === '') {
    throw new HttpProblem(
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  }
  return key;
}

/** Vertex AI: no project in the path means express mode, where the API key is the caller. */
function vertexCallerOf(req: IncomingMessage, project: string | undefined): string {
  if (project !== undefined) {
    // Any OAuth token or key is accepted; the project pays, so it holds the quota.
    const auth = req.headers.authorization;
    if ((typeof auth === 'string' && /^Bearer \S/.test(auth)) || typeof req.headers['x-goog-api-key'] === 'string') return `projects/${project}`;
  } else {
    const key = req.headers['x-goog-api-key'];
    if (typeof key === 'string' && key !== '') return key;
  }
  throw new HttpProblem(
    401,
    'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
  );
}

/** POST /{version}/models/{target}, matched like express's '/:version/models/:target' (case-insensitive, optional trailing slash). */
const MODEL_ROUTE = /^\/([^/]+)\/models\/([^/]+?)\/?$/i;
/** POST /{version}/projects/{project}/locations/{location}/publishers/google/models/{target} (Vertex AI). */
const VERTEX_ROUTE = /^\/([^/]+)\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/]+?)\/?$/i;
/** POST /{version}/publishers/google/models/{target} (Vertex AI express mode). */
const VERTEX_EXPRESS_ROUTE = /^\/([^/]+)\/publishers\/google\/models\/([^/]+?)\/?$/i;

/** A matched model route: the API, the raw version and target, and the Vertex project (raw). */
interface ModelRoute {
  backend: Backend;
  version: string;
  target: string;
  project?: string;
}

function matchModelRoute(path: string): ModelRoute | undefined {
  const gemini = MODEL_ROUTE.exec(path);
  if (gemini) return { backend: 'gemini', version: gemini[1], target: gemini[2] };
  const vertex = VERTEX_ROUTE.exec(path);
  if (vertex) return { backend: 'vertex', version: vertex[1], target: vertex[4], project: vertex[2] };
  const express = VERTEX_EXPRESS_ROUTE.exec(path);
  if (express) return { backend: 'vertex', version: express[1], target: express[2] };
  return undefined;
}

const API_VERSIONS: Record<Backend, readonly string[]> = { gemini: ['v1', 'v1beta'], vertex: ['v1', 'v1beta1'] };

/** Answers the request if it is a Gemini model call and returns true; false: not one of ours. */
export type GeminiHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * The Gemini routes on plain node:http objects: this is the hot path, so it skips express's
 * router (a sizeable share of a zero-latency call's CPU). Errors answer in Google's format.
 */
export function geminiHandler(state: MockState): GeminiHandler {
  const formats: Record<Backend, ApiFormat> = { gemini: geminiFormat(state, 'gemini'), vertex: geminiFormat(state, 'vertex') };
  return (req, res) => {
    if (req.method !== 'POST') return false;
    const url = req.url ?? '';
    const mark = url.indexOf('?');
    const route = matchModelRoute(mark < 0 ? url : url.slice(0, mark));
    if (!route) return false;
    handleModelCall(state, formats[route.backend], req, res, route).catch((error: unknown) => {
      console.error('[mock-provider] unexpected error:', error);
      if (res.headersSent) return void res.destroy();
      sendGeminiError(res, 500, 'internal error in the mock provider');
    });
    return true;
  };
}

async function handleModelCall(
  state: MockState,
  format: ApiFormat,
  req: IncomingMessage,
  res: ServerResponse,
  route: ModelRoute,
): Promise<void> {
  let model = '';
  try {
    const version = decodePathParameter(route.version);
    const target = decodePathParameter(route.target);
    const colon = target.lastIndexOf(':');
    model = colon > 0 ? target.slice(0, colon) : target;
    const method = colon > 0 ? target.slice(colon + 1) : '';
    const versions = API_VERSIONS[route.backend];
    if (!versions.includes(version)) throw new HttpProblem(404, `unknown API version ${version} (use ${versions.join(' or ')})`);
    if (method !== 'generateContent' && method !== 'streamGenerateContent' && method !== 'countTokens') {
      throw new HttpProblem(404, `unknown method ${JSON.stringify(method)} (generateContent, streamGenerateContent, countTokens)`);
    }
    const project = route.project === undefined ? undefined : decodePathParameter(route.project);
    const apiKey = route.backend === 'vertex' ? vertexCallerOf(req, project) : apiKeyOf(req);
    const config = state.config;
    if (!config.models.includes(model)) {
      throw new HttpProblem(404, `models/${model} is not found for API version ${version}, or is not supported for ${method}.`);
    }
    const body = await readJsonBody(req, config.maxBodyBytes);
    if (method === 'countTokens') {
      const parsed = parseBody(countTokensRequestSchema, body, 'CountTokensRequest');
      const text = requestText('generateContentRequest' in parsed ? (parsed.generateContentRequest as GenerateRequest) : (parsed as GenerateRequest));
      const totalTokens = tokensForCharacters(text.length);
      sendJson(res, 200, { totalTokens, promptTokensDetails: [{ modality: 'TEXT', tokenCount: totalTokens }] });
      return;
    }
    const stream = method === 'streamGenerateContent';
    if (stream && queryOf(req).alt !== 'sse') throw new HttpProblem(400, 'streamGenerateContent needs ?alt=sse (the mock streams server-sent events only)');
    const request = parseGenerateRequest(body);
    const prompt = requestText(request);
    await serveCompletion(
      state,
      req,
      res,
      {
        api: 'gemini',
        model,
        apiKey,
        prompt,
        inputTokens: tokensForCharacters(prompt.length),
        maxOutputTokens: request.generationConfig?.maxOutputTokens,
        stream,
        toolCalls: config.answerToolCalls ? toolCallsFor(request) : undefined,
      },
      format,
    );
  } catch (error) {
    if (error instanceof ClientGone) return clientGone(state.metrics, 'gemini', error);
    if (!(error instanceof HttpProblem)) throw error;
    const knownModel = state.config.models.includes(model) ? model : 'unknown';
    state.metrics.requests.inc({ api: 'gemini', model: knownModel, status: String(error.status) });
    sendGeminiError(res, error.status, error.message);
  }
}

function decodePathParameter(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    throw new HttpProblem(400, `malformed percent-encoding in the path: ${JSON.stringify(value)}`);
  }
}
