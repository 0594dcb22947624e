"""PEFT reads a LoRA adapter that agentrl wrote: the base with the adapter
loaded by PeftModel gives the logits of the folder `trainer merge` wrote
(both run by transformers, f32), and differs from the base alone.

usage: peft_check.py BASE ADAPTER MERGED DEVICE
"""
import sys

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

base_dir, adapter, merged_dir, device = sys.argv[1:5]
load = lambda d: AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).to(device).eval()
base = load(base_dir)
with torch.no_grad():
    ids = torch.randint(0, base.config.vocab_size, (2, 12), generator=torch.Generator().manual_seed(3)).to(device)
    plain = base(input_ids=ids).logits
    peft = PeftModel.from_pretrained(base, adapter).eval()
    with_adapter = peft(input_ids=ids).logits
    merged = load(merged_dir)(input_ids=ids).logits
d_merged = (with_adapter - merged).abs().max().item()
d_base = (with_adapter - plain).abs().max().item()
print(f"peft_check: max |PEFT - merged| {d_merged:.2e}, max |PEFT - base| {d_base:.2e}")
if d_merged > 1e-4 or d_base == 0:
    sys.exit("peft_check: FAILED (want |PEFT - merged| <= 1e-4 and an adapter that changes the logits)")
