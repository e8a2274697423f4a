"""Opens an agro checkpoint with transformers, as a user would, and checks it against what agro itself
computed (bench/open.ts writes that reference): the chat template, the tokenizer, the logits, that
generate() stops at <|end|>, and that the protocol tags survive skip_special_tokens.
Usage: python3 bench/_open_check.py CHECKPOINT REFERENCE.json   (prints one JSON object)"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ck, ref_path = sys.argv[1], sys.argv[2]
ref = json.load(open(ref_path))
tok = AutoTokenizer.from_pretrained(ck)
model = AutoModelForCausalLM.from_pretrained(ck, torch_dtype=torch.float32)
model.eval()
conv = ref["messages"]
out = {}
text = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
out["template_text_equal"] = text == ref["promptText"]
ids = tok.apply_chat_template(conv, tokenize=True, add_generation_prompt=True)
if isinstance(ids, dict) or hasattr(ids, "input_ids"):
    ids = ids["input_ids"]
ids = list(ids)
out["template_ids_equal"] = ids == ref["promptIds"]
with torch.no_grad():
    logits = model(torch.tensor([ids])).logits[0, -1]
ref_logits = torch.tensor(ref["lastLogits"])
out["logits_max_abs_diff"] = float((logits - ref_logits).abs().max())
with torch.no_grad():
    gen = model.generate(torch.tensor([ids]), max_new_tokens=ref["maxNewTokens"], do_sample=False)
new = gen[0, len(ids):].tolist()
out["generated_tokens"] = len(new)
out["generate_stopped_at_end"] = len(new) > 0 and new[-1] == ref["endId"]
out["generate_equals_agro"] = new == ref["greedyIds"]
decoded = tok.decode(new, skip_special_tokens=True)
out["decoded_skip_special"] = decoded
out["protocol_tags_survive"] = ("<think>" in decoded) == ("<think>" in ref["greedyText"]) and "<|end|>" not in decoded
out["eos_token_id"] = model.generation_config.eos_token_id
print(json.dumps(out))
