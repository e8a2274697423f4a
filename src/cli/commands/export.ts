import type { Command } from 'commander';
import { AgroError } from '../../errors.ts';
import { initBackend } from '../../model/backend.ts';
import { loadCheckpoint } from '../../model/checkpoint.ts';
import { exportGguf } from '../../model/gguf.ts';

export function register(program: Command): void {
  const exp = program.command('export').description('Write a checkpoint in another format');
  exp
    .command('gguf')
    .description('An f32 GGUF for llama.cpp (and LM Studio, Ollama, node-llama-cpp) with the chat template and end-of-turn token in its metadata')
    .argument('<checkpoint>', 'checkpoint folder')
    .argument('<out>', 'output .gguf file')
    .action(async (ckpt: string, out: string) => {
      if (!/\.gguf$/i.test(out)) throw new AgroError('usage', `export gguf: the output file must end in .gguf, got ${out}`);
      await initBackend();
      const ck = loadCheckpoint(ckpt);
      try {
        const { bytes } = exportGguf(ck.model, ck.tokenizer, out);
        process.stdout.write(`wrote ${out} (${(bytes / 1e6).toFixed(1)} MB)\n`);
      } finally {
        ck.model.dispose();
      }
    });
}
