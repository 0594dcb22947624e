"""A Qwen2.5-0.5B-shaped Qwen2ForCausalLM with random weights (seed 0) and
the real Qwen tokenizer, written as a Hugging Face folder for gpu-check.sh
step 4 and step 6.

usage: make_model.py OUT TOKENIZER_DIR DTYPE(f32|bf16) [DEVICE]

The shape is Qwen2.5-0.5B's config.json (24 layers, hidden 896, 14 heads,
2 key/value heads, intermediate 4864, vocabulary 151936, tied embeddings,
rope_theta 1e6); the weights are transformers' own initialisation.
"""
import os
import shutil
import sys
import time

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

out, tok_dir, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
device = sys.argv[4] if len(sys.argv) > 4 else "cpu"
t0 = time.time()
cfg = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                  rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                  bos_token_id=151643, eos_token_id=151645, use_sliding_window=False)
torch.manual_seed(0)
with torch.device(device):
    model = Qwen2ForCausalLM(cfg)
model = model.to({"f32": torch.float32, "bf16": torch.bfloat16}[dtype]).cpu()
model.save_pretrained(out, safe_serialization=True)
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(tok_dir, f), os.path.join(out, f))
n = sum(p.numel() for p in model.parameters())
print(f"make_model: {out}: {n/1e6:.1f}M parameters, {dtype}, {time.time()-t0:.1f} s")
