"""A parity fixture (the layout of the shared qwen2-tiny-a: config.json,
model.safetensors, cases.json) for a model folder, with the reference
logits from transformers' Qwen2ForCausalLM run in float64 on DEVICE.
torch/'s TestQwen2FixtureParity then holds agentrl's f32 forward and every
decode path to it within 1e-4 ($AGENTRL_QWEN2_FIXTURE=OUT); bf16.json
records transformers' own bf16 distance from it, for TestBF16FixtureParity.

usage: fixture.py MODEL_DIR OUT DEVICE

Cases: one right-padded batch of 2 (lengths 7 and 4, logits at every
position) and one greedy decode of 2 prefixes (lengths 5 and 3) for 3
steps. Prefixes are redrawn until every greedy choice wins by 1e-3, so a
float32 implementation must reproduce the tokens.
"""
import json
import os
import sys
import time

import torch
from transformers import AutoModelForCausalLM

src, out, device = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.time()
os.makedirs(out, exist_ok=True)
for f in ("config.json", "model.safetensors"):
    dst = os.path.join(out, f)
    if not os.path.exists(dst):
        os.symlink(os.path.abspath(os.path.join(src, f)), dst)
model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float64, attn_implementation="eager").to(device).eval()
V = model.config.vocab_size
g = torch.Generator().manual_seed(5)


def logits(ids, mask=None):
    with torch.no_grad():
        x = torch.tensor(ids, device=device)
        m = None if mask is None else torch.tensor(mask, device=device)
        return model(input_ids=x, attention_mask=m).logits.double().cpu()


def r7(t):  # 7 significant digits, as the shared fixtures
    return [float(f"{v:.7g}") for v in t.tolist()]


lens = [7, 4]
T = max(lens)
rows = [torch.randint(1, V, (n,), generator=g).tolist() for n in lens]
ids = [r + [0] * (T - len(r)) for r in rows]
mask = [[1] * len(r) + [0] * (T - len(r)) for r in rows]
full_logits = logits(ids, mask)
full = {"name": "padded_batch2", "kind": "full", "input_ids": ids, "attention_mask": mask,
        "position_ids": [list(range(T))] * len(rows),
        "logits": [[r7(full_logits[b, t]) for t in range(T)] for b in range(len(rows))]}


def margin(l):
    top = torch.topk(l, 2).values
    return float(top[0] - top[1])


steps_n, worst = 3, 0.0
for attempt in range(20):
    prefixes = [torch.randint(1, V, (n,), generator=g).tolist() for n in (5, 3)]
    seqs = [list(p) for p in prefixes]
    per_step, ok = [], True
    for s in range(steps_n + 1):
        ls = [logits([q])[0, -1] for q in seqs]
        if min(margin(l) for l in ls) < 1e-3:
            ok = False
            break
        per_step.append(ls)
        for q, l in zip(seqs, ls):
            q.append(int(l.argmax()))
    if ok:
        break
else:
    sys.exit("fixture: no prefixes with greedy margins of 1e-3 in 20 draws")
dec = {"name": "greedy_decode_batch2", "kind": "decode", "prefix_ids": prefixes,
       "prefill_last_logits": [r7(l) for l in per_step[0]],
       "first_token_ids": [int(l.argmax()) for l in per_step[0]], "steps": [],
       "generated_ids": [q[len(p):] for q, p in zip(seqs, prefixes)]}
for s in range(1, steps_n + 1):
    dec["steps"].append({"input_ids": [q[len(p) + s - 1] for q, p in zip(seqs, prefixes)],
                         "position_ids": [len(p) + s - 1 for p in prefixes],
                         "logits": [r7(l) for l in per_step[s]],
                         "next_token_ids": [int(l.argmax()) for l in per_step[s]]})
with open(os.path.join(out, "cases.json"), "w") as f:
    json.dump({"cases": [full, dec]}, f)

# bf16.json: how far transformers' own bf16 forward (SDPA) lands from the
# float64 logits of the full case, over its unpadded positions. torch/'s
# TestBF16FixtureParity holds agentrl's bf16 forward to the same reference
# and to twice this distance ($AGENTRL_BF16_FIXTURE=OUT).
del model
bf = AutoModelForCausalLM.from_pretrained(src, dtype=torch.bfloat16, attn_implementation="sdpa").to(device).eval()
with torch.no_grad():
    lb = bf(input_ids=torch.tensor(ids, device=device), attention_mask=torch.tensor(mask, device=device)).logits.double().cpu()
real = torch.tensor(mask, dtype=torch.bool)
d = (lb - full_logits).abs()[real]
with open(os.path.join(out, "bf16.json"), "w") as f:
    json.dump({"case": full["name"], "transformers_bf16_max_abs_diff": float(d.max()),
               "transformers_bf16_argmax": lb.argmax(-1).tolist(),
               "reference_max_abs_logit": float(full_logits.abs()[real].max())}, f)
print(f"fixture: transformers bf16 (sdpa) max |diff| to float64 {float(d.max()):.3e} on the unpadded positions")
print(f"fixture: {out}: transformers float64 on {device}, {attempt + 1} draw(s), {time.time()-t0:.1f} s")
