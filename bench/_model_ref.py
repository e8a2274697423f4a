"""Reference PyTorch implementation of the same Llama-family model as src/model/llama.ts, for
bench/model.ts: times AdamW training steps and KV-cache sampling on this CPU and prints one JSON
object. Usage: python3 bench/_model_ref.py '{"vocab":4096,...}'"""
import json
import math
import re
import resource
import sys
import time

import torch
import torch.nn.functional as F

cfg = json.loads(sys.argv[1])
if cfg.get("threads"):
    torch.set_num_threads(int(cfg["threads"]))
torch.manual_seed(0)
V, H, I, L = cfg["vocab"], cfg["hidden"], cfg["intermediate"], cfg["layers"]
NH, NKV = cfg["heads"], cfg["kvHeads"]
HD = H // NH
B, T = cfg["batch"], cfg["seq"]


class RMSNorm(torch.nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


inv_freq = 1.0 / (10000 ** (torch.arange(0, HD, 2).float() / HD))
pos = torch.arange(4096).float()
freqs = torch.outer(pos, inv_freq)
emb = torch.cat((freqs, freqs), dim=-1)
COS, SIN = emb.cos(), emb.sin()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(H), RMSNorm(H)
        self.q = torch.nn.Linear(H, NH * HD, bias=False)
        self.k = torch.nn.Linear(H, NKV * HD, bias=False)
        self.v = torch.nn.Linear(H, NKV * HD, bias=False)
        self.o = torch.nn.Linear(NH * HD, H, bias=False)
        self.gate = torch.nn.Linear(H, I, bias=False)
        self.up = torch.nn.Linear(H, I, bias=False)
        self.down = torch.nn.Linear(I, H, bias=False)

    def forward(self, x, start, cache):
        b, t, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, t, NH, HD).transpose(1, 2)
        k = self.k(h).view(b, t, NKV, HD).transpose(1, 2)
        v = self.v(h).view(b, t, NKV, HD).transpose(1, 2)
        cos, sin = COS[start:start + t], SIN[start:start + t]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            if cache[0] is not None:
                k = torch.cat([cache[0], k], 2)
                v = torch.cat([cache[1], v], 2)
            cache[0], cache[1] = k, v
        g = NH // NKV
        kr = k.repeat_interleave(g, dim=1)
        vr = v.repeat_interleave(g, dim=1)
        # torch 1.13 (Debian) has no scaled_dot_product_attention.
        sc = (q @ kr.transpose(-1, -2)) / math.sqrt(HD)
        if t > 1:
            sc = sc + torch.full((t, kr.shape[2]), float("-inf")).triu(1 + kr.shape[2] - t)
        a = torch.softmax(sc, -1) @ vr
        x = x + self.o(a.transpose(1, 2).reshape(b, t, NH * HD))
        h2 = self.ln2(x)
        return x + self.down(F.silu(self.gate(h2)) * self.up(h2))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, H)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
        self.norm = RMSNorm(H)

    def forward(self, ids, start=0, caches=None):
        x = self.embed(ids)
        for i, blk in enumerate(self.blocks):
            x = blk(x, start, caches[i] if caches is not None else None)
        return self.norm(x) @ self.embed.weight.t()  # tied embeddings


def blas_in_use():
    with open("/proc/self/maps") as f:
        libs = {m.group(0) for m in re.finditer(r"lib(openblas\w*|blas|mkl\w*|blis\w*)[^/\s]*\.so[.\d]*", f.read())}
    return sorted(libs)


model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, V, (B, T + 1))


def train_step():
    logits = model(ids[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


train_step()
steps = cfg["steps"]
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(steps):
    train_step()
train_s = (time.perf_counter() - t0) / steps
train_cpu_s = (time.process_time() - c0) / steps

P, N = cfg["promptLen"], cfg["newTokens"]


@torch.no_grad()
def sample():
    prompt = torch.randint(0, V, (B, P))
    caches = [[None, None] for _ in range(L)]
    logits = model(prompt, 0, caches)[:, -1]
    out = []
    for s in range(N):
        probs = torch.softmax(logits, -1)
        tok = torch.multinomial(probs, 1)
        out.append(tok)
        if s + 1 < N:
            logits = model(tok, P + s, caches)[:, -1]
    return torch.cat(out, 1)


sample()
t0, c0 = time.perf_counter(), time.process_time()
sample()
sample_s = time.perf_counter() - t0
sample_cpu_s = time.process_time() - c0

print(json.dumps({
    "torch": torch.__version__,
    "threads": torch.get_num_threads(),
    "blasInfo": re.search(r"BLAS_INFO=(\w+)", torch.__config__.show()).group(1) if "BLAS_INFO" in torch.__config__.show() else "?",
    "blasLibs": blas_in_use(),
    "trainStepMs": train_s * 1000,
    "trainTokensPerSec": B * T / train_s,
    "sampleTokensPerSec": B * N / sample_s,
    "trainTokensPerCpuSec": B * T / train_cpu_s,
    "sampleTokensPerCpuSec": B * N / sample_cpu_s,
    "peakRssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
