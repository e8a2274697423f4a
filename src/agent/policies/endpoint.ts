/**
 * An OpenAI-compatible endpoint as a policy (vLLM, llama.cpp's server, Ollama, `agro serve`): one
 * /chat/completions call per turn through the project's LLM client (retries, timeout, concurrency
 * limit). Observations go out as `tool` messages by default, which agro's server renders with its
 * `<|tool|>` header exactly as a local checkpoint does; `toolRole: 'user'` is for servers that refuse
 * a tool message without a tool call id.
 */
import { z } from 'zod';
import { AgroError } from '../../errors.ts';
import { LlmClient, type ChatMessage as LlmMessage } from '../../llm/client.ts';
import type { Policy, TurnReply, TurnRequest } from './types.ts';

export interface EndpointPolicyOptions {
  url: string;
  /** Model name; default the first one the endpoint's /models lists. */
  model?: string;
  apiKey?: string;
  timeoutMs?: number;
  maxRetries?: number;
  concurrency?: number;
  toolRole?: 'tool' | 'user';
}

const ModelsSchema = z.object({ data: z.array(z.object({ id: z.string().min(1) })) });

async function listModels(baseUrl: string, apiKey: string | undefined, timeoutMs: number): Promise<string[] | null> {
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  let res: Response;
  try {
    res = await fetch(url, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = err instanceof Error ? ((err.cause as { code?: string } | undefined)?.code ?? err.message) : String(err);
    throw new AgroError('not_found', `endpoint ${baseUrl} is unreachable (${cause})`);
  }
  if (!res.ok) return null;
  const parsed = ModelsSchema.safeParse(await res.json().catch(() => null));
  return parsed.success ? parsed.data.data.map((m) => m.id) : null;
}

export class EndpointPolicy implements Policy {
  readonly kind = 'endpoint';
  readonly name: string;
  readonly description: string;
  /** Its prompt is not agro's to know: the environment's defaults apply. */
  readonly promptContract = null;

  private constructor(
    private readonly client: LlmClient,
    private readonly toolRole: 'tool' | 'user',
  ) {
    this.name = client.config.model;
    this.description = `endpoint ${client.config.baseUrl} (model ${client.config.model})`;
  }

  /** Checks that the endpoint answers (and picks its model when none is named) before any question runs. */
  static async open(o: EndpointPolicyOptions): Promise<EndpointPolicy> {
    if (!z.url().safeParse(o.url).success) throw new AgroError('usage', `--llm-url must be a URL, got "${o.url}"`);
    const apiKey = o.apiKey ?? process.env.AGRO_LLM_API_KEY;
    const timeoutMs = o.timeoutMs ?? 120_000;
    const models = await listModels(o.url, apiKey, Math.min(timeoutMs, 10_000));
    const model = o.model ?? models?.[0];
    if (!model) throw new AgroError('usage', `endpoint ${o.url} lists no model: name one with --llm-model`);
    const client = new LlmClient({ baseUrl: o.url, model, apiKey, timeoutMs, maxRetries: o.maxRetries ?? 2, concurrency: o.concurrency ?? 4, temperature: 0 });
    return new EndpointPolicy(client, o.toolRole ?? 'tool');
  }

  async complete(req: TurnRequest): Promise<TurnReply> {
    const messages: LlmMessage[] = req.messages.map((m) => ({ role: m.role === 'tool' ? this.toolRole : m.role, content: m.content }));
    const r = await this.client.complete(messages, { temperature: req.temperature, maxTokens: req.maxTokens, ...(req.topP !== undefined ? { topP: req.topP } : {}), ...(req.seed !== undefined ? { seed: req.seed } : {}) });
    req.onText?.(r.content);
    return {
      text: r.content,
      finish: r.finishReason === 'length' ? 'length' : 'stop',
      ...(r.promptTokens !== undefined ? { promptTokens: r.promptTokens } : {}),
      ...(r.completionTokens !== undefined ? { completionTokens: r.completionTokens } : {}),
    };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
