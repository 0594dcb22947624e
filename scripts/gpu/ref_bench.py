"""The references of scripts/gpu-bench.sh, on the same random
Qwen2.5-0.5B shape as agentrl's `trainer bench`: one JSON line per run.

  peak                 the device's copy bandwidth (GB/s, read + write of a
                       1 GiB copy) and bf16 matmul rate (TFLOP/s, 8192^3)
  generate BATCH       transformers' generate (bf16 weights, SDPA, sampling,
                       PROMPT prompt and NEW new tokens, no early stop)
  train BATCH SEQ      a plain PyTorch step: forward (f32 weights under bf16
                       autocast, SDPA), log-softmax gather of the taken
                       tokens, token-mean loss, backward, AdamW

Every figure is the median of 5 runs after one warm-up, timed with CUDA
events on CUDA (wall time on the CPU, where the script only rehearses).
usage: ref_bench.py DEVICE peak | generate BATCH [PROMPT NEW] | train BATCH SEQ
"""
import json
import statistics
import sys
import time

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

dev = torch.device(sys.argv[1])
mode = sys.argv[2]
cuda = dev.type == "cuda"
REPEATS = 5


def timed(f):
    """Median seconds of REPEATS calls of f after one warm-up."""
    f()
    times = []
    for _ in range(REPEATS):
        if cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            f()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def model(dtype):
    cfg = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                      num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                      rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                      attn_implementation="sdpa", use_sliding_window=False)
    torch.manual_seed(0)
    with torch.device(dev):
        m = Qwen2ForCausalLM(cfg)
    return m.to(dtype)


out = {"mode": mode, "device": str(dev), "torch": torch.__version__}
if mode == "peak":
    n = 1 << 28  # 1 GiB of f32
    x = torch.empty(n, device=dev)
    y = torch.empty_like(x)
    s = timed(lambda: y.copy_(x))
    out["copy_gbs"] = 2 * 4 * n / s / 1e9
    k = 8192 if cuda else 1024
    a = torch.randn(k, k, device=dev, dtype=torch.bfloat16)
    b = torch.randn(k, k, device=dev, dtype=torch.bfloat16)
    s = timed(lambda: a @ b)
    out["bf16_matmul_tflops"] = 2 * k**3 / s / 1e12
elif mode == "generate":
    batch = int(sys.argv[3])
    prompt = int(sys.argv[4]) if len(sys.argv) > 4 else 128
    new = int(sys.argv[5]) if len(sys.argv) > 5 else 128
    m = model(torch.bfloat16).eval()
    ids = torch.randint(0, m.config.vocab_size, (batch, prompt), device=dev, generator=None)
    mask = torch.ones_like(ids)

    def gen():
        with torch.no_grad():
            m.generate(input_ids=ids, attention_mask=mask, do_sample=True, max_new_tokens=new, min_new_tokens=new,
                       pad_token_id=0)

    s = timed(gen)
    out.update(batch=batch, prompt_len=prompt, new_tokens=new, median_s=s, tokens_per_s=batch * new / s)
elif mode == "train":
    batch, seq = int(sys.argv[3]), int(sys.argv[4])
    m = model(torch.float32).train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-6, fused=cuda)
    ids = torch.randint(0, m.config.vocab_size, (batch, seq), device=dev)

    def step():
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = m(input_ids=ids).logits[:, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        loss = -lp.mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    s = timed(step)
    params = sum(p.numel() for p in m.parameters())
    out.update(batch=batch, seq_len=seq, median_s=s, tokens_per_s=batch * seq / s, params=params,
               model_tflops=6 * params * batch * seq / s / 1e12)
else:
    sys.exit(f"ref_bench.py: unknown mode {mode!r}")
print(json.dumps(out))
