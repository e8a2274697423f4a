/**
 * The Hugging Face side files that make a checkpoint open with no hand-fixing: tokenizer_config.json
 * (special tokens, the chat template in Jinja) and generation_config.json (generation ends at `<|end|>`
 * as well as `<|eos|>`). Written only for tokenizers that carry agro's chat tokens; a foreign tokenizer's
 * template is not ours to invent.
 */
import { CHAT_TEMPLATE_JINJA, CHAT_TOKENS, hasChatTokens } from './chat.ts';
import type { ModelConfig } from './config.ts';
import type { Tokenizer } from './tokenizer.ts';

export const HF_SIDE_FILES = { tokenizerConfig: 'tokenizer_config.json', generationConfig: 'generation_config.json' } as const;

export function tokenizerConfig(tk: Tokenizer, cfg: ModelConfig): Record<string, unknown> | null {
  if (!hasChatTokens(tk)) return null;
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: CHAT_TOKENS.bos,
    eos_token: CHAT_TOKENS.eos,
    pad_token: CHAT_TOKENS.pad,
    unk_token: null,
    // The chat template writes <|bos|> itself; nothing is added around encoded text.
    add_bos_token: false,
    add_eos_token: false,
    // decode() must give back the exact text (SQL spacing), not "cleaned up" spaces before punctuation.
    clean_up_tokenization_spaces: false,
    model_max_length: cfg.maxPositions,
    chat_template: CHAT_TEMPLATE_JINJA,
  };
}

export function generationConfig(tk: Tokenizer): Record<string, unknown> | null {
  if (!hasChatTokens(tk)) return null;
  return {
    bos_token_id: tk.tokenId(CHAT_TOKENS.bos),
    // <|end|> closes every turn: a chat reply ends there.
    eos_token_id: [tk.tokenId(CHAT_TOKENS.end), tk.tokenId(CHAT_TOKENS.eos)],
    pad_token_id: tk.tokenId(CHAT_TOKENS.pad),
    do_sample: false,
  };
}
