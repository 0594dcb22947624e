"""Puts LoRA adapter folders through Hugging Face PEFT, for
torch/peft/interop_test.go.

argv: in.json out.json. in.json is {"ids": [token ids], "jobs": [...]}; a job:
  base     a Hugging Face model folder (transformers loads it)
  adapter  an adapter folder
  make     when set, PEFT's LoraConfig arguments: the adapter is made by
           PEFT (get_peft_model; unless make says otherwise, every matrix
           drawn at random, lora_B included, which PEFT's default
           initialises to zero) over base in
           float32 and saved with save_pretrained into adapter; not set, the
           folder is read as it is
  logits   whether to compute the logits
  grads    when set, where to write the adapters' gradients (safetensors,
           float64)

With logits, the folder is loaded with PeftModel.from_pretrained over base,
both in float64, and its logits of ids (one row, every position) are
returned with the base's own. With grads, the adapters' gradients of
L = -mean of log p(ids[t+1] | ids[..t]) by autograd, through the folder
loaded the same way (eval mode: no dropout), under PEFT's saved keys (no
adapter name). out.json: {"jobs": [{"logits", "base_logits",
"adapter_config", "loss"}]}.
"""

import json
import os
import sys

import peft
import torch
from transformers import AutoModelForCausalLM


def make(job):
    torch.manual_seed(job["seed"])
    base = AutoModelForCausalLM.from_pretrained(job["base"], dtype=torch.float32)
    kw = {"task_type": "CAUSAL_LM", "init_lora_weights": False}
    kw.update(job["make"])
    model = peft.get_peft_model(base, peft.LoraConfig(**kw))
    model.save_pretrained(job["adapter"])


def logits(job, ids):
    base = AutoModelForCausalLM.from_pretrained(job["base"], dtype=torch.float64, attn_implementation="eager")
    x = torch.tensor([ids])
    with torch.no_grad():
        plain = base(input_ids=x).logits[0].tolist()
        model = peft.PeftModel.from_pretrained(base, job["adapter"])
        model.double().eval()
        adapted = model(input_ids=x).logits[0].tolist()
    return adapted, plain


def grads(job, ids):
    from safetensors.torch import save_file
    base = AutoModelForCausalLM.from_pretrained(job["base"], dtype=torch.float64, attn_implementation="eager")
    model = peft.PeftModel.from_pretrained(base, job["adapter"], is_trainable=True)
    model.double().eval()
    x = torch.tensor([ids])
    logp = torch.log_softmax(model(input_ids=x).logits[0, :-1], -1).gather(-1, x[0, 1:, None])[:, 0]
    loss = -logp.mean()
    loss.backward()
    out = {n.replace(".default.", "."): p.grad for n, p in model.named_parameters() if "lora_" in n}
    assert out and all(g is not None for g in out.values()), f"adapters without a gradient: {out.keys()}"
    save_file({n: g.contiguous() for n, g in out.items()}, job["grads"])
    return loss.item()


def main():
    with open(sys.argv[1]) as f:
        a = json.load(f)
    out = []
    for job in a["jobs"]:
        if job.get("make"):
            make(job)
        r = {}
        if job.get("logits"):
            r["logits"], r["base_logits"] = logits(job, a["ids"])
        if job.get("grads"):
            r["loss"] = grads(job, a["ids"])
        with open(os.path.join(job["adapter"], "adapter_config.json")) as f:
            r["adapter_config"] = json.load(f)
        out.append(r)
    with open(sys.argv[2], "w") as f:
        json.dump({"jobs": out, "peft": peft.__version__}, f)


if __name__ == "__main__":
    main()
