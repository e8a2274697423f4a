/**
 * Any GGUF file as a policy, on llama.cpp (node-llama-cpp's prebuilt CPU addon): the conversation is
 * rendered with the chat template in the file's own metadata (tokenizer.chat_template, Jinja) and
 * tokenized with the file's tokenizer, so a user's Qwen or Llama GGUF and an `agro export gguf` file
 * run the same way. Generation ends at the model's end-of-generation tokens. One context with a few
 * sequences; turns beyond that wait for a free sequence.
 */
import { existsSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { Template } from '@huggingface/jinja';
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import { AgroError } from '../../errors.ts';
import { Semaphore } from '../../util/concurrency.ts';
import { nativeLlama } from '../../model/llamacpp-engine.ts';
import type { ChatMessage } from '../../model/chat.ts';
import type { Policy, TurnReply, TurnRequest } from './types.ts';

export interface GgufPolicyOptions {
  /** Sequences decoded side by side (default 4). */
  sequences?: number;
  /** Context tokens per sequence (default: the model's training context, at most 4096). */
  contextSize?: number;
  threads?: number;
}

/** Whether a file starts with the GGUF magic. */
export function isGgufFile(path: string): boolean {
  if (!existsSync(path) || !statSync(path).isFile()) return false;
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(4);
    return readSync(fd, b, 0, 4, 0) === 4 && b.toString('latin1') === 'GGUF';
  } finally {
    closeSync(fd);
  }
}

export class GgufPolicy implements Policy {
  readonly kind = 'gguf';
  readonly name: string;
  readonly description: string;
  /** Its prompt is not agro's to know: the environment's defaults apply. */
  readonly promptContract = null;
  private readonly free: LlamaContextSequence[];
  private readonly sem: Semaphore;

  private constructor(
    path: string,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly template: Template,
  ) {
    this.name = basename(path).replace(/\.gguf$/i, '');
    this.free = Array.from({ length: context.totalSequences }, () => context.getSequence());
    this.sem = new Semaphore(this.free.length);
    this.description = `GGUF ${path} on llama.cpp (${this.free.length} sequences of ${context.contextSize} tokens)`;
  }

  static async open(path: string, opts: GgufPolicyOptions = {}): Promise<GgufPolicy> {
    if (!isGgufFile(path)) throw new AgroError('invalid_input', `${path} is not a GGUF file`);
    const llama = await nativeLlama();
    let model: LlamaModel;
    try {
      model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    } catch (err) {
      throw new AgroError('invalid_input', `llama.cpp could not load ${path}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const md = model.fileInfo.metadata as { tokenizer?: { chat_template?: unknown } };
    const source = md.tokenizer?.chat_template;
    if (typeof source !== 'string' || source.trim() === '') {
      await model.dispose();
      throw new AgroError('invalid_input', `${path} has no chat template in its metadata (tokenizer.chat_template)`);
    }
    let template: Template;
    try {
      template = new Template(source);
    } catch (err) {
      await model.dispose();
      throw new AgroError('invalid_input', `${path}: its chat template does not parse: ${err instanceof Error ? err.message : String(err)}`);
    }
    const sequences = opts.sequences ?? 4;
    const contextSize = opts.contextSize ?? Math.min(model.trainContextSize, 4096);
    const context = await model.createContext({ contextSize, sequences, threads: opts.threads ?? 1, flashAttention: false });
    return new GgufPolicy(path, model, context, template);
  }

  /** The prompt text: the file's template with the generation prompt. */
  render(messages: ChatMessage[]): string {
    try {
      return this.template.render({
        messages,
        add_generation_prompt: true,
        bos_token: this.model.tokens.bosString ?? '',
        eos_token: this.model.tokens.eosString ?? '',
        // raise_exception and strftime_now, which transformers gives templates (Llama 3.x and Qwen call
        // them), are built into @huggingface/jinja.
      });
    } catch (err) {
      throw new AgroError('invalid_input', `${this.name}: the chat template failed to render: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  complete(req: TurnRequest): Promise<TurnReply> {
    return this.sem.run(async () => {
      const seq = this.free.pop()!;
      try {
        return await this.generate(seq, req);
      } finally {
        this.free.push(seq);
      }
    });
  }

  private async generate(seq: LlamaContextSequence, req: TurnRequest): Promise<TurnReply> {
    const prompt = this.model.tokenize(this.render(req.messages), true);
    // node-llama-cpp's contextSize is per sequence.
    const room = this.context.contextSize - prompt.length;
    const limit = Math.min(req.maxTokens, Math.floor(room));
    if (limit <= 0) return { text: '', finish: 'length', promptTokens: prompt.length, completionTokens: 0 };
    // Keep what the sequence already holds of this prompt (a later turn extends the earlier one).
    const have = seq.contextTokens;
    let keep = 0;
    while (keep < have.length && keep < prompt.length - 1 && have[keep] === prompt[keep]) keep++;
    if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
    const out: Token[] = [];
    let shown = '';
    let finish: TurnReply['finish'] = 'length';
    const gen = seq.evaluate(prompt.slice(keep), { temperature: req.temperature, topP: req.topP, seed: req.seed });
    for await (const tok of gen) {
      if (this.model.isEogToken(tok)) {
        finish = 'stop';
        break;
      }
      out.push(tok);
      if (req.onText) {
        const text = this.model.detokenize(out, true);
        // Hold back a split multi-byte character until it is complete.
        if (!text.endsWith('\uFFFD') && text.length > shown.length) {
          req.onText(text.slice(shown.length));
          shown = text;
        }
      }
      if (out.length >= limit || req.signal?.aborted) break;
    }
    // node-llama-cpp's generator also ends by itself at an end-of-generation token, without yielding it.
    if (out.length < limit && !req.signal?.aborted) finish = 'stop';
    const text = this.model.detokenize(out, true);
    if (req.onText && text.length > shown.length) req.onText(text.slice(shown.length));
    return { text, finish, promptTokens: prompt.length, completionTokens: out.length + (finish === 'stop' ? 1 : 0) };
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}
