"""GRPOTrainer (TRL) on an agro checkpoint and an `agro export --format trl` dataset, rewarded by agro's
environment server (integrations/python/agro_trl.py). Run by scripts/e2e-trl.ts and bench/serve.ts:

    python scripts/e2e_trl.py '{"checkpoint": ..., "train": ..., "out": ..., "steps": 3, ...}'

With "multiturn": true the completions are agro's multi-turn episodes (agro_trl.agro_rollout_func: the
policy's <sql> runs in the server's sessions, observations are masked out of the loss), each turn at most
"max_turn_tokens", the episode at most "max_response_tokens"; "rollout_log" keeps one JSON line per episode.
With "environment": true the completions come from TRL's own tool loop with agro_env.AgroEnv as the
environment_factory (execute_sql answered in the server's sessions, the reward owned by the environment's
get_reward); "episode_log" keeps one JSON line per episode (its turns, observations and agro's reward parts), in
the shape of the reward log. "max_turns" (the checkpoint's contract) bounds the tool calls at max_turns - 1.
"lr_end" decays the learning rate by a cosine to it (as agro train's minLrRatio); "save_model" writes the
trained policy there as an agro checkpoint (Hugging Face layout, agro's own tokenizer files).

Writes <out>/trl_result.json: TRL's log history, each step's wall time, the rows kept and dropped, and
TRL's own record of every completion and its reward (GRPOConfig(log_completions=True) writes one parquet
per step under <out>/trl/completions/; they are gathered here).
The agro checkpoint has config.json, model.safetensors and tokenizer.json; its chat template (the
built-in model's, src/model/chat.ts) is given to the tokenizer here as Jinja.
"""
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pandas as pd
import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "integrations" / "python"))
from agro_trl import agro_reward_func, agro_rollout_func  # noqa: E402
from agro_env import AgroEnv, agro_env_rows, episode_finisher, prepare_tokenizer  # noqa: E402

# src/model/chat.ts: <|bos|> then <|role|>content<|end|> per message; generation opens <|assistant|>.
CHAT_TEMPLATE = (
    "{{ '<|bos|>' }}{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] + '<|end|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)

cfg = json.loads(sys.argv[1])
out = Path(cfg["out"])
out.mkdir(parents=True, exist_ok=True)
torch.manual_seed(cfg.get("seed", 0))
if cfg.get("threads"):
    torch.set_num_threads(int(cfg["threads"]))

ck = Path(cfg["checkpoint"])
# agro's tokenizer marks its protocol tags (<think>, <sql>, <answer>...) special, and TRL decodes completions
# with skip_special_tokens=True, which would strip them before the reward sees them. They are the policy's
# own output, so here they become ordinary added tokens; the chat tokens (<|end|>...) stay special.
tj = json.loads((ck / "tokenizer.json").read_text())
for t in tj.get("added_tokens", []):
    if not t["content"].startswith("<|"):
        t["special"] = False
patched = out / "tokenizer.json"
patched.write_text(json.dumps(tj))
tok = PreTrainedTokenizerFast(tokenizer_file=str(patched), bos_token="<|bos|>", eos_token="<|end|>", pad_token="<|pad|>")
tok.chat_template = CHAT_TEMPLATE
tok.padding_side = "left"
model = AutoModelForCausalLM.from_pretrained(str(ck), dtype=torch.float32)
end_id, eos_id = tok.convert_tokens_to_ids("<|end|>"), tok.convert_tokens_to_ids("<|eos|>")
model.generation_config.eos_token_id = [end_id, eos_id]
model.generation_config.pad_token_id = tok.pad_token_id

MULTI = bool(cfg.get("multiturn"))
ENV = bool(cfg.get("environment"))
if ENV:
    prepare_tokenizer(tok)
L = int(cfg["max_completion"])
TURN = int(cfg.get("max_turn_tokens", L))
RESPONSE = int(cfg.get("max_response_tokens", L))
limit = model.config.max_position_embeddings
ds = load_dataset("json", data_files={"train": cfg["train"]})["train"]
n_all = len(ds)
# A prompt plus its completion (multi-turn: its first turn) must fit the model's positions; longer rows are dropped and counted.
first = TURN if MULTI else L
# (the environment path: the row's question is appended by reset; the exported prompt measures the same length)
ds = ds.filter(lambda r: len(tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True)) + first <= limit)
print(f"e2e_trl: {len(ds)} of {n_all} rows fit {limit} positions with {L} completion tokens", flush=True)
if len(ds) == 0:
    sys.exit("e2e_trl: no row fits the model's context; export with a smaller --schema-chars")


class StepTimes(TrainerCallback):
    def __init__(self):
        self.times, self._t = [], 0.0

    def on_step_begin(self, args, state, control, **kw):
        self._t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.times.append(time.perf_counter() - self._t)


G = int(cfg["group"])
P = int(cfg.get("prompts_per_step", 1))
args = GRPOConfig(
    output_dir=str(out / "trl"),
    per_device_train_batch_size=G * P,
    num_generations=G,
    max_completion_length=RESPONSE if MULTI else L,
    **({"max_tool_calling_iterations": int(cfg["max_turns"]) - 1} if ENV else {}),
    max_steps=int(cfg["steps"]),
    learning_rate=float(cfg.get("lr", 1e-5)),
    **({"lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr": float(cfg["lr_end"])}} if cfg.get("lr_end") is not None else {}),
    beta=float(cfg.get("beta", 0.0)),
    temperature=float(cfg.get("temperature", 1.0)),
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    use_cpu=True,
    seed=int(cfg.get("seed", 0)),
    data_seed=int(cfg.get("seed", 0)),
    dataloader_num_workers=0,
    disable_tqdm=True,
    log_completions=True,
    num_completions_to_print=int(cfg.get("print_completions", 2)),
)
# TRL writes one completions parquet per step and they are all gathered below: none may be left from an earlier run.
shutil.rmtree(out / "trl" / "completions", ignore_errors=True)
times = StepTimes()
REWARD_NAME = "AgroEnv" if ENV else "agro"
reward = agro_reward_func(rewards=cfg.get("rewards"), log_path=str(out / "rewards.jsonl"), name="agro")
extra = {}
train_rows = ds
if ENV:
    from functools import partial

    reward = episode_finisher(log_path=str(out / "rewards.jsonl"))
    extra["environment_factory"] = partial(AgroEnv, rewards=cfg.get("rewards"))
    train_rows = agro_env_rows(ds)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
if MULTI:
    extra["rollout_func"] = agro_rollout_func(ds, max_turn_tokens=TURN, max_response_tokens=RESPONSE, log_path=cfg.get("rollout_log"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=[reward], args=args, train_dataset=train_rows, callbacks=[times], **extra)
t0 = time.perf_counter()
trainer.train()
seconds = time.perf_counter() - t0


def completion_text(c):
    """TRL logs a conversational completion as its assistant messages (an array in parquet); the text is their content."""
    if isinstance(c, str):
        return c
    return "".join(m.get("content") or "" for m in list(c) if m.get("role") == "assistant")


logged = []
for f in sorted((out / "trl" / "completions").glob("completions_*.parquet")):
    df = pd.read_parquet(f)
    for r in df.to_dict("records"):
        logged.append({"step": int(r["step"]), "completion": completion_text(r["completion"]), "reward": float(r[REWARD_NAME]), "advantage": float(r["advantage"])})
result = {
    "rows": len(ds),
    "rows_dropped": n_all - len(ds),
    "seconds": seconds,
    "step_seconds": times.times,
    "log_history": trainer.state.log_history,
    "completions": logged,
    "versions": {"trl": __import__("trl").__version__, "transformers": __import__("transformers").__version__, "torch": torch.__version__},
    "threads": torch.get_num_threads(),
}
(out / "trl_result.json").write_text(json.dumps(result, indent=2))
if cfg.get("save_model"):
    # agro's own tokenizer files (the protocol tags special, as agro trains them) and the prompt contract it was
    # trained on, the trained weights beside them.
    dest = Path(cfg["save_model"])
    trainer.model.save_pretrained(str(dest), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "prompt_contract.json"):
        if (ck / name).exists():
            (dest / name).write_bytes((ck / name).read_bytes())
print(json.dumps({k: result[k] for k in ("rows", "seconds", "step_seconds")}), flush=True)
