// `npm run bench -- open [--ckpt DIR] [--python PATH]`: does a checkpoint open everywhere with no hand-fixing?
//  - transformers (bench/_open_check.py, run by --python, default `python3`; install transformers,
//    tokenizers and torch CPU into a venv from the local package index): apply_chat_template equals
//    agro's rendering (text and ids), the logits agree, generate() stops at <|end|> with agro's greedy
//    tokens, skip_special_tokens keeps the protocol tags;
//  - llama.cpp (node-llama-cpp): `agro export gguf` loads with no warning, the chat template is in the
//    metadata, and generation ends at the end-of-turn token.
// Default checkpoint: the built-in base model (models/base); its prompt contract sets the schema budget.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import { flag } from './_args.ts';
import { initBackend } from '../src/model/backend.ts';
import { loadCheckpoint } from '../src/model/checkpoint.ts';
import { CHAT_TOKENS, renderChatText, renderPrompt, type ChatMessage } from '../src/model/chat.ts';
import { sampleGroups } from '../src/model/generate.ts';
import { exportGguf } from '../src/model/gguf.ts';
import { SqlEnvironment } from '../src/agent/sql-env.ts';
import { checkpointPrompt, readPromptContract, turnTokens } from '../src/prompt/contract.ts';
import { resolveModelPath } from '../src/model/builtin.ts';
import { SqlPool } from '../src/sql/pool.ts';

export async function run(args: string[]): Promise<void> {
  const ckpt = resolveModelPath(flag(args, '--ckpt', 'base'));
  const python = flag(args, '--python', 'python3');
  if (!existsSync(ckpt)) {
    console.log(`open: no checkpoint at ${ckpt} (run agro quickstart first, or pass --ckpt DIR)`);
    return;
  }
  await initBackend();
  const ck = loadCheckpoint(ckpt);
  const tk = ck.tokenizer;
  const pool = new SqlPool({ size: 1 });
  const asked = flag(args, '--schema-chars', '');
  // The prompt the checkpoint was trained with (its contract, as predict reads it), unless --schema-chars asks another.
  const env = new SqlEnvironment(pool, checkpointPrompt(ckpt, asked ? { schemaChars: Number(asked) } : {}));
  const messages: ChatMessage[] = env.openingFor({ id: 'q', dbId: 'music_store', dbPath: 'data/databases/music_store/music_store.sqlite', question: 'How many artists are there?', goldSql: '' });
  await pool.close();
  const promptIds = renderPrompt(tk, messages);
  const maxNewTokens = turnTokens(readPromptContract(ckpt), undefined).maxTurnTokens;
  const endId = tk.tokenId(CHAT_TOKENS.end);
  const [[greedy]] = await sampleGroups(ck.model, [promptIds], 1, { maxNewTokens, temperature: 0, stopTokenIds: [endId, tk.tokenId(CHAT_TOKENS.eos)] });
  const logits = tf.tidy(() => ck.model.forward(tf.tensor2d([promptIds], [1, promptIds.length], 'int32')));
  const all = (await logits.data()) as Float32Array;
  logits.dispose();
  const V = ck.model.config.vocabSize;
  const lastLogits = Array.from(all.subarray(all.length - V));
  const dir = mkdtempSync(join(tmpdir(), 'agro-open-'));
  try {
    const refPath = join(dir, 'ref.json');
    writeFileSync(refPath, JSON.stringify({ messages, promptText: renderChatText(messages, { addGenerationPrompt: true }), promptIds, lastLogits, maxNewTokens, endId, greedyIds: greedy.tokens, greedyText: tk.decode(greedy.tokens) }));
    console.log(`checkpoint ${ckpt}: prompt ${promptIds.length} tokens, agro's greedy turn ${greedy.tokens.length} tokens (${greedy.finish})`);
    const py = spawnSync(python, ['bench/_open_check.py', ckpt, refPath], { encoding: 'utf8' });
    if (py.status !== 0) console.log(`transformers: check failed to run (${python}): ${(py.stderr || py.error?.message || '').trim().split('\n').slice(-1)[0]}`);
    else console.log(`transformers: ${py.stdout.trim()}`);

    const gguf = join(dir, 'policy.gguf');
    exportGguf(ck.model, tk, gguf);
    const logs: string[] = [];
    const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: LlamaLogLevel.warn, logger: (level, msg) => logs.push(`${level}: ${msg.trim()}`) });
    const m = await llama.loadModel({ modelPath: gguf });
    const ctx = await m.createContext({ contextSize: ck.model.config.maxPositions });
    const seq = ctx.getSequence();
    const text = renderChatText(messages, { addGenerationPrompt: true });
    const out: number[] = [];
    for await (const t of seq.evaluate(m.tokenize(text, true), { temperature: 0 })) {
      // node-llama-cpp ends the generator at an end-of-generation token without yielding it.
      if (m.isEogToken(t)) break;
      out.push(t);
      if (out.length >= maxNewTokens) break;
    }
    const stopped = out.length < maxNewTokens;
    const md = m.fileInfo.metadata as { tokenizer?: { chat_template?: string } };
    console.log(`llama.cpp: warnings ${logs.length === 0 ? 'none' : JSON.stringify(logs)}; chat template in metadata: ${Boolean(md.tokenizer?.chat_template)}; greedy turn ended at an end-of-generation token: ${stopped} after ${out.length} tokens; same tokens as agro: ${JSON.stringify(out) === JSON.stringify(greedy.finish === 'stop' ? greedy.tokens.slice(0, -1) : greedy.tokens)}`);
    await ctx.dispose();
    await m.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
    ck.model.dispose();
  }
}
