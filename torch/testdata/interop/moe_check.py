"""transformers' side of torch/moe_interop_test.go, for a model folder that
hf_model.py made.

argv: in.json out.json. in.json holds:
  dir        the model folder
  ids, mask  a right-padded batch [B][T] and its attention mask
  coef       the weight of the aux loss in the short loss below
  grads      where to write the gradients (safetensors, float64)
  export     a folder agentrl saved from dir ("" for none)

In float64, with the router logits (output_router_logits): the routers'
load-balancing loss transformers' Qwen3MoeForCausalLM (Qwen3_5MoeForCausalLM)
returns (aux_loss)
for the batch, and the gradient of every parameter of the short loss
  L = -mean of log p(ids[b][t+1] | ids[b][..t]) over the real pairs + coef * aux_loss
by autograd (the experts' under the per-expert keys of the checkpoint:
mlp.experts.{e}.gate_proj.weight, ...). With export: the folder loaded with from_pretrained (no
missing or unexpected keys) has dir's parameters exactly.
out.json: {"aux_loss", "loss", "export_max_diff"}.
"""

import json
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM


def main():
    with open(sys.argv[1]) as f:
        a = json.load(f)
    model = AutoModelForCausalLM.from_pretrained(
        a["dir"], dtype=torch.float64, attn_implementation="eager", experts_implementation="eager"
    )
    model.train()
    ids = torch.tensor(a["ids"])
    mask = torch.tensor(a["mask"])
    out = model(input_ids=ids, attention_mask=mask, output_router_logits=True)
    logp = torch.log_softmax(out.logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
    pairs = (mask[:, :-1] * mask[:, 1:]).double()
    loss = -(logp * pairs).sum() / pairs.sum() + a["coef"] * out.aux_loss
    loss.backward()
    grads = {}
    for n, p in model.named_parameters():
        if p.grad is None:
            continue
        # The experts' 3-D tensors, under the per-expert keys checkpoints hold.
        if n.endswith("mlp.experts.gate_up_proj"):
            inter = p.shape[1] // 2
            for e in range(p.shape[0]):
                grads[f"{n[:-len('gate_up_proj')]}{e}.gate_proj.weight"] = p.grad[e, :inter].contiguous()
                grads[f"{n[:-len('gate_up_proj')]}{e}.up_proj.weight"] = p.grad[e, inter:].contiguous()
        elif n.endswith("mlp.experts.down_proj"):
            for e in range(p.shape[0]):
                grads[f"{n[:-len('down_proj')]}{e}.down_proj.weight"] = p.grad[e].contiguous()
        else:
            grads[n] = p.grad.contiguous()
    save_file(grads, a["grads"])
    res = {"aux_loss": out.aux_loss.item(), "loss": loss.item(), "export_max_diff": None}
    if a["export"]:
        orig = AutoModelForCausalLM.from_pretrained(a["dir"], dtype=torch.float32)
        got, info = AutoModelForCausalLM.from_pretrained(a["export"], dtype=torch.float32, output_loading_info=True)
        bad = {k: v for k, v in info.items() if v}
        assert not bad, f"loading agentrl's export: {bad}"
        want = dict(orig.named_parameters())
        have = dict(got.named_parameters())
        assert want.keys() == have.keys(), (sorted(want.keys() ^ have.keys()))
        res["export_max_diff"] = max((want[k] - have[k]).abs().max().item() for k in want)
    with open(sys.argv[2], "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
