"""agro's multi-turn episode, token by token, for outside trainers (TRL's rollout_func: agro_trl.py; verl's agent
loop: agro_verl_agent.py), through the environment server's sessions (POST /v1/env/sessions, .../step).

The layout is `agro train`'s (src/rl/rollout.ts), so the loss falls on the same tokens:

    prompt   <|bos|><|system|>…<|end|><|user|>…<|end|><|assistant|>              not trained (the prompt)
    turn     the tokens the policy sampled, then its <|end|>                      trained (mask 1)
    reply    <|tool|> + the observation's tokens (<observation>…</observation>)
             + <|end|><|assistant|>                                               not trained (mask 0)
    turn     …                                                                     trained
    …until <answer>, agro's turn limit (the server's episode ends), an invalid turn, or the token budget;
    a trailing reply that no policy token follows is dropped.

Sampled tokens are kept as sampled (never re-tokenized); the observation is encoded piece by piece with the
chat tokens as ids, as agro does. One difference by choice: with `stop_at_action` (the default) a turn also
stops at its first `</sql>` or `</answer>` token (agro's episode runner cuts a turn there, src/agent/episode.ts)
and its closing `<|end|>` is appended, not sampled: the token agro's policy is trained to emit there.

The server that opened a session keeps it; if it is lost mid-episode the episode is replayed, turn by turn,
on another live server (the environment is deterministic: the same turns get the same observations, which
is checked) and goes on there.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from agro_client import AgroClient, AgroError, AgroSessionLost

# src/model/chat.ts CHAT_TOKENS
CHAT = {"bos": "<|bos|>", "eos": "<|eos|>", "pad": "<|pad|>", "end": "<|end|>", "system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>", "tool": "<|tool|>"}
ACTION_CLOSE = ("</sql>", "</answer>")


class AgroTokens:
    """The chat-template pieces of an agro tokenizer (a transformers tokenizer over agro's tokenizer.json)."""

    def __init__(self, tokenizer: Any):
        self.tk = tokenizer
        vocab = tokenizer.get_vocab()
        missing = [t for t in CHAT.values() if t not in vocab]
        if missing:
            raise ValueError(f"the tokenizer lacks agro's chat tokens {missing} (src/model/chat.ts)")
        self.id = {k: vocab[t] for k, t in CHAT.items()}
        self.action_close = [vocab[t] for t in ACTION_CLOSE if t in vocab]

    def encode(self, text: str) -> list[int]:
        return list(self.tk.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        # Protocol tags are the policy's own text: kept. Chat tokens never occur inside a turn's body.
        return self.tk.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def render_prompt(self, messages: Sequence[dict]) -> list[int]:
        """renderPrompt (src/model/chat.ts): each piece encoded on its own, ids concatenated."""
        ids = [self.id["bos"]]
        for m in messages:
            ids.append(self.id[m["role"]])
            ids.extend(self.encode(m["content"]))
            ids.append(self.id["end"])
        ids.append(self.id["assistant"])
        return ids


@dataclass
class EpisodeOptions:
    max_turn_tokens: int = 96
    max_response_tokens: int = 384
    max_positions: int = 1 << 30
    stop_at_action: bool = True


@dataclass
class Episode:
    """One rollout: the session it plays on, its completion ids and loss mask, the turns as text."""

    row: dict
    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    tool_calls: int = 0
    end_reason: str | None = None
    answer: str | None = None
    truncated: bool = False
    session_id: str | None = None
    servers: list[str] = field(default_factory=list)
    replays: int = 0

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    def context(self) -> list[int]:
        return self.prompt_ids + self.ids

    def result(self) -> dict:
        end = len(self.ids)
        while end > 0 and self.mask[end - 1] == 0:
            end -= 1
        return {
            "completion_ids": self.ids[:end],
            "env_mask": self.mask[:end],
            "turns": self.turns or [""],
            "observations": self.observations,
            "tool_calls": self.tool_calls,
            "end_reason": self.end_reason or "token_budget",
            "answer": self.answer,
            "truncated": self.truncated,
            "servers": self.servers,
            "replays": self.replays,
        }


class EpisodeRunner:
    """Plays episodes against agro's sessions; the caller samples each turn (batched or not)."""

    def __init__(self, client: AgroClient, tokens: AgroTokens, opts: EpisodeOptions | None = None):
        self.client = client
        self.tk = tokens
        self.opts = opts or EpisodeOptions()

    def stop_ids(self) -> list[int]:
        ids = [self.tk.id["end"], self.tk.id["eos"]]
        return ids + (self.tk.action_close if self.opts.stop_at_action else [])

    def _open(self, ep: Episode) -> None:
        r = ep.row
        out = self.client.open_session(r["db_id"], r["question"], evidence=r.get("evidence") or None)
        ep.session_id = out["session_id"]
        ep.servers.append(out["server"])

    def start(self, row: dict, prompt_ids: list[int] | None = None) -> Episode:
        """row: db_id, question, evidence? and the prompt (agro export's chat messages) or its ids."""
        ids = prompt_ids if prompt_ids is not None else self.tk.render_prompt(row["prompt"])
        if len(ids) + self.opts.max_turn_tokens > self.opts.max_positions:
            raise ValueError(f"the prompt has {len(ids)} tokens; with {self.opts.max_turn_tokens} new tokens it exceeds {self.opts.max_positions} positions")
        ep = Episode(row=row, prompt_ids=list(ids))
        self._open(ep)
        return ep

    def _step(self, ep: Episode, text: str) -> dict:
        for attempt in range(len(self.client.urls) + 1):
            try:
                if attempt > 0:
                    # Replay the turns so far on another server; the same turns must meet the same observations.
                    ep.replays += 1
                    self._open(ep)
                    for k, prev in enumerate(ep.turns[:-1]):
                        r = self.client.step(ep.session_id, prev)
                        if r.get("done") or r.get("observation") != ep.observations[k]:
                            raise AgroError(0, f"replaying the episode on {ep.servers[-1]}: turn {k} got another answer than on {ep.servers[-2]}")
                return self.client.step(ep.session_id, text)
            except AgroSessionLost:
                if attempt == len(self.client.urls):
                    raise
        raise AssertionError("unreachable")

    def feed(self, ep: Episode, sampled: Sequence[int]) -> None:
        """One sampled turn: `sampled` is what the sampler returned, ending with a stop token unless cut by length."""
        toks = list(sampled)
        end_id = self.tk.id["end"]
        cut = next((i for i, t in enumerate(toks) if t in self.stop_ids()), None)
        if cut is not None:
            toks = toks[: cut + 1]
            if toks[-1] in self.tk.action_close:
                body = toks
                toks = toks + [end_id]
            else:
                body = toks[:-1]
        else:
            body = toks
        ep.ids += toks
        ep.mask += [1] * len(toks)
        text = self.tk.decode(body)
        ep.turns.append(text)
        if cut is None:
            ep.end_reason, ep.truncated = "token_budget", True
            return
        r = self._step(ep, text)
        if r["done"]:
            ep.end_reason, ep.answer = r["reason"], r.get("answer")
            return
        ep.tool_calls += 1
        ep.observations.append(r["observation"])
        env = [self.tk.id["tool"], *self.tk.encode(r["observation"]), end_id, self.tk.id["assistant"]]
        ep.ids += env
        ep.mask += [0] * len(env)
        used = len(ep.ids)
        if used + self.opts.max_turn_tokens > self.opts.max_response_tokens or len(ep.prompt_ids) + used + self.opts.max_turn_tokens > self.opts.max_positions:
            ep.end_reason, ep.truncated = "token_budget", True

    def close(self, ep: Episode) -> None:
        if ep.session_id is not None:
            try:
                self.client.close_session(ep.session_id)
            except AgroError:
                pass  # the episode is over either way; an expired session is the server's to drop
            ep.session_id = None

    def play(self, rows: Sequence[dict], sample: Callable[[list[list[int]], int], list[list[int]]], prompt_ids: Sequence[list[int]] | None = None, threads: int = 16) -> list[dict]:
        """Play one episode per row to the end. sample(contexts, max_new_tokens) -> the sampled tokens of each."""
        with ThreadPoolExecutor(max_workers=threads) as pool:
            eps = list(pool.map(lambda i: self.start(rows[i], None if prompt_ids is None else prompt_ids[i]), range(len(rows))))
            try:
                active = eps
                while active:
                    samples = sample([e.context() for e in active], self.opts.max_turn_tokens)
                    list(pool.map(lambda es: self.feed(es[0], es[1]), zip(active, samples)))
                    active = [e for e in active if not e.done]
            finally:
                list(pool.map(self.close, eps))
        return [e.result() for e in eps]
