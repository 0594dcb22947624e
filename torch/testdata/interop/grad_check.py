"""transformers' side of the gradient and export checks of
torch/qwen35_test.go, for a model folder that hf_model.py made (a dense
model, or Nemotron-H with moe blocks: no router loss; moe_check.py is the
Qwen MoE one).

argv: in.json out.json. in.json holds:
  dir        the model folder
  ids, mask  a right-padded batch [B][T] and its attention mask
  grads      where to write the gradients (safetensors, float64)
  export     a folder agentrl saved from dir
  attn       transformers' attn_implementation (default eager)
  no_export  skip the export check (a real-width model, whose float64
             copies would not fit beside the gradients)
  grads32    where to write the same gradients by transformers' float32
             forward and autograd (optional), to measure float32's own error
             (and the float32 short loss, out.json's loss32)

In float64, train mode: the gradient of every parameter of the short loss
  L = -mean of log p(ids[b][t+1] | ids[b][..t]) over the real pairs
by autograd, under the names of the text model's checkpoint (model.*,
lm_head.weight; a Nemotron-H moe block's experts under the per-expert keys,
mixer.experts.{e}.up_proj.weight and down_proj.weight, transformers'
eager expert loop running them). The export, loaded with AutoModelForCausalLM.from_pretrained
in float32 (no missing, unexpected or mismatched keys), against dir loaded
the same way (a multimodal Gemma 4's vision and audio towers left out): the class it loads as, the largest difference of any
parameter (the names must be the same), and of the float64 logits of the
batch.
out.json: {"loss", "loss32" (with grads32), "export_class", "export_max_diff",
"export_logits_max_diff"}.
"""

import json
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM


def text_name(n):
    """The checkpoint name of a text model's parameter (a multimodal
    class keeps the text model under model.language_model.)."""
    return "model." + n[len("model.language_model."):] if n.startswith("model.language_model.") else n


def logits(model, ids, mask):
    with torch.no_grad():
        return model.double().eval()(input_ids=ids, attention_mask=mask).logits


def gradients(a, ids, mask, dtype):
    """The short loss by the folder's model in dtype, and the gradient of
    every parameter under its checkpoint name."""
    model = AutoModelForCausalLM.from_pretrained(
        a["dir"], dtype=dtype, attn_implementation=a.get("attn", "eager"), experts_implementation="eager"
    )
    model.train()
    out = model(input_ids=ids, attention_mask=mask)
    logp = torch.log_softmax(out.logits[:, :-1].to(torch.float64), -1).gather(-1, ids[:, 1:, None])[..., 0]
    pairs = (mask[:, :-1] * mask[:, 1:]).double()
    loss = -(logp * pairs).sum() / pairs.sum()
    loss.backward()
    grads = {}
    for n, p in model.named_parameters():
        if p.grad is None:
            continue
        if n.endswith((".mixer.experts.up_proj", ".mixer.experts.down_proj")):
            head, proj = n.rsplit(".", 1)
            for e in range(p.shape[0]):
                grads[f"{head}.{e}.{proj}.weight"] = p.grad[e].contiguous()
            continue
        grads[text_name(n)] = p.grad.contiguous()
    return loss.item(), grads


def main():
    with open(sys.argv[1]) as f:
        a = json.load(f)
    ids = torch.tensor(a["ids"])
    mask = torch.tensor(a["mask"])
    attn = a.get("attn", "eager")
    loss, grads = gradients(a, ids, mask, torch.float64)
    save_file(grads, a["grads"])
    del grads
    loss32 = None
    if a.get("grads32"):
        loss32, grads = gradients(a, ids, mask, torch.float32)
        save_file(grads, a["grads32"])
        del grads
    if a.get("no_export"):
        with open(sys.argv[2], "w") as f:
            json.dump({"loss": loss, "loss32": loss32}, f)
        return

    orig = AutoModelForCausalLM.from_pretrained(
        a["dir"], dtype=torch.float32, attn_implementation=attn, experts_implementation="eager"
    )
    got, info = AutoModelForCausalLM.from_pretrained(
        a["export"], dtype=torch.float32, attn_implementation=attn, experts_implementation="eager",
        output_loading_info=True
    )
    bad = {k: v for k, v in info.items() if v}
    assert not bad, f"loading agentrl's export: {bad}"
    # (A multimodal Gemma 4 folder loads with its vision tower, which the
    # text model agentrl exports skips by name.)
    towers = ("model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio.")
    want = {text_name(n): p for n, p in orig.named_parameters() if not n.startswith(towers)}
    have = {text_name(n): p for n, p in got.named_parameters()}
    assert want.keys() == have.keys(), sorted(want.keys() ^ have.keys())
    res = {
        "loss": loss,
        "export_class": type(got).__name__,
        "export_max_diff": max((want[k] - have[k]).abs().max().item() for k in want),
        "export_logits_max_diff": (logits(orig, ids, mask) - logits(got, ids, mask)).abs().max().item(),
    }
    with open(sys.argv[2], "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
