"""Makes random-weight models with transformers' own classes and
save_pretrained, and their reference outputs, for torch/interop_test.go.

argv: in.json out.json. in.json is {"models": [...]}, one model each:
  dir             where the model folder goes
  family          qwen2, qwen3, qwen3_moe, llama, nemotron_h, qwen3_5 (Qwen3_5ForCausalLM,
                  the text model) or qwen3_5_vl
                  (Qwen3_5ForConditionalGeneration: config is its
                  text_config, vision its vision_config, and mtp.* tensors
                  are added to the saved weights, as the published
                  checkpoints carry them); qwen3_5_moe and qwen3_5_moe_vl
                  the same for Qwen3.5 MoE; gemma4 (Gemma4ForCausalLM)
                  and gemma4_vl (Gemma4ForConditionalGeneration, vision
                  its vision_config, no MTP tensors)
  config          the config class's arguments (shapes, rope_parameters, ...)
  vision          qwen3_5_vl's vision_config
  style           "5" (as save_pretrained writes it) or "4" (config.json
                  rewritten as transformers 4 wrote it: top-level rope_theta,
                  rope_scaling, torch_dtype)
  max_shard_size  save_pretrained's max_shard_size ("" for its default)
  fused           save the experts fused (save_original_format=False:
                  mlp.experts.gate_up_proj and down_proj, as the published
                  Qwen3.5 MoE checkpoints hold them) instead of per expert
  seed            torch's seed for the weights and the token ids
  ref_dtype       float64 or float32: the dtype of transformers' forward
  ref_attn        the reference's attn_implementation (default eager)
  full            [T, ...]: lengths of the rows of the right-padded case
                  (padded to the first); an explicit-position-ids case
                  of the same rows follows when explicit is true
  explicit        see full
  explicit_start  where the explicit case's first row starts and the
                  others jump to after their third token (default 5 and
                  20: large values turn RoPE's angles far)
  ref32           also transformers' float32 forward's logits of each
                  full case (logits_f32) and its greedy generate's
                  (prefill_last_logits_f32, each step's logits_f32, from
                  the float64 run's tokens), to measure float32's own error
                  (with full: the float32 model is loaded for the full cases)
  decode          prefix lengths of the greedy decoding case
  steps           decode steps after the first token

It writes <dir>/cases.json in the form torch's fixtureParity reads: full
cases (input ids, attention mask, position ids, transformers' logits) and a
decode case (transformers' generate, greedy: the prefix's last logits, each
step's token and logits, the generated ids). The logits come from the
folder loaded back with AutoModelForCausalLM.from_pretrained, so a
rewritten config must mean to transformers what the original did (checked).
out.json: {"models": [...]}, each the config.json written and the files;
the versions of transformers and torch.
"""

import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM

CONFIGS = {
    "qwen2": transformers.Qwen2Config,
    "qwen3": transformers.Qwen3Config,
    "llama": transformers.LlamaConfig,
    "qwen3_moe": transformers.Qwen3MoeConfig,
    "qwen3_5": transformers.Qwen3_5TextConfig,
    "qwen3_5_moe": transformers.Qwen3_5MoeTextConfig,
    "gemma4": transformers.Gemma4TextConfig,
    "nemotron_h": transformers.NemotronHConfig,
}

# The multimodal families: their config and model classes.
MULTIMODAL = {
    "qwen3_5_vl": (transformers.Qwen3_5Config, transformers.Qwen3_5ForConditionalGeneration),
    "qwen3_5_moe_vl": (transformers.Qwen3_5MoeConfig, transformers.Qwen3_5MoeForConditionalGeneration),
    "gemma4_vl": (transformers.Gemma4Config, transformers.Gemma4ForConditionalGeneration),
}

# The families with mixture-of-experts layers (Nemotron-H's moe blocks).
MOE = {"qwen3_moe", "qwen3_5_moe", "qwen3_5_moe_vl", "nemotron_h"}


def add_mtp(path, hidden, gen):
    """Adds multi-token-prediction tensors to the saved weights, named as
    the published Qwen3.5 checkpoints name them (transformers skips them)."""
    from safetensors.torch import load_file, save_file
    f = os.path.join(path, "model.safetensors")
    tensors = load_file(f)
    tensors["mtp.fc.weight"] = torch.randn(hidden, 2 * hidden, generator=gen)
    tensors["mtp.norm.weight"] = torch.randn(hidden, generator=gen)
    tensors["mtp.layers.0.mlp.up_proj.weight"] = torch.randn(hidden, hidden, generator=gen)
    save_file(tensors, f, metadata={"format": "pt"})


def perturb(model, gen):
    """Norm weights spread around 1 and biases drawn, so that a norm or a
    bias put in the wrong place shows in the logits (the init sets them to
    1 and 0). Qwen3.5's RMSNorms scale by 1 + w (its gated norm by w):
    their w spreads around 0, so that they scale as much as the others.
    A Mamba-2 layer's skip D (initialised to 1) spreads around 1 too, and
    a Nemotron-H router's e_score_correction_bias (a buffer, init 0) is
    drawn, so that it moves the choice of experts. A Gemma 4 MoE layer's
    extra norms (post_feedforward_layernorm_1, _2, pre_feedforward_layernorm_2)
    and its router's scale and per_expert_scale (init 1) spread around 1."""
    offset = getattr(model.config.get_text_config(), "model_type", "") in ("qwen3_5_text", "qwen3_5_moe_text")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("norm.weight", "norm_f.weight", "mixer.D", "layernorm_1.weight", "layernorm_2.weight",
                              "router.scale", "router.per_expert_scale")):
                centre = 0 if offset and not name.endswith("linear_attn.norm.weight") else 1
                p.copy_(centre + 0.3 * (2 * torch.rand(p.shape, generator=gen) - 1))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
        # Gemma 4's layer_scalar, a buffer saved with the weights (init 1).
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(1 + 0.3 * (2 * torch.rand(b.shape, generator=gen) - 1))
            elif name.endswith("e_score_correction_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=gen))


def to_style4(path):
    """Rewrites config.json as transformers 4 wrote it."""
    with open(path) as f:
        c = json.load(f)
    rp = dict(c.pop("rope_parameters"))
    c["rope_theta"] = rp.pop("rope_theta")
    c["rope_scaling"] = None if rp.get("rope_type", "default") == "default" else rp
    c["torch_dtype"] = c.pop("dtype")
    c["transformers_version"] = "4.57.1"
    with open(path, "w") as f:
        json.dump(c, f, indent=2)


def greedy(model, prefix, steps):
    """transformers' generate, greedy, on one row: the logits of every
    position it decoded from and the tokens."""
    ids = torch.tensor([prefix])
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=steps + 1,
        min_new_tokens=steps + 1,
        output_logits=True,
        return_dict_in_generate=True,
        pad_token_id=0,
    )
    toks = out.sequences[0, len(prefix):].tolist()
    logits = [l[0].double().tolist() for l in out.logits]
    assert len(toks) == steps + 1 and len(logits) == steps + 1, (len(toks), len(logits))
    return toks, logits


def forced(model, prefix, toks):
    """The logits of model's cached decoding of prefix, then of each of
    toks in turn: the prefill's last position's, then each step's."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor([prefix]), use_cache=True)
        logits = [out.logits[0, -1].double().tolist()]
        cache = out.past_key_values
        for i, tok in enumerate(toks):
            out = model(input_ids=torch.tensor([[tok]]), past_key_values=cache, use_cache=True,
                        position_ids=torch.tensor([[len(prefix) + i]]))
            cache = out.past_key_values
            logits.append(out.logits[0, -1].double().tolist())
    return logits


def make(a):
    """Makes the model a describes; returns its config.json and files."""
    torch.manual_seed(a["seed"])
    gen = torch.Generator().manual_seed(a["seed"])
    if a["family"] in MULTIMODAL:
        config_class, model_class = MULTIMODAL[a["family"]]
        cfg = config_class(text_config=a["config"], vision_config=a["vision"],
                           tie_word_embeddings=a["config"].get("tie_word_embeddings", False))
        model = model_class(cfg).to(torch.float32)
    else:
        cfg = CONFIGS[a["family"]](**a["config"])
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    perturb(model, gen)
    model.generation_config.eos_token_id = None
    kw = {"max_shard_size": a["max_shard_size"]} if a["max_shard_size"] else {}
    if a.get("fused"):
        kw["save_original_format"] = False
    model.save_pretrained(a["dir"], **kw)
    if a["family"] in MULTIMODAL and not a["family"].startswith("gemma4"):
        add_mtp(a["dir"], a["config"]["hidden_size"], gen)
    rope = getattr(model.config.get_text_config(), "rope_parameters", None) or {}  # (Nemotron-H has no RoPE)
    del model
    cpath = os.path.join(a["dir"], "config.json")
    if a["style"] == "4":
        to_style4(cpath)

    dt = getattr(torch, a["ref_dtype"])
    # MoE experts run transformers' eager loop over the experts (its default,
    # grouped_mm, takes no float64).
    moe = a["family"] in MOE or a["config"].get("enable_moe_block", False)  # (Gemma 4's MoE block)
    eager = {"experts_implementation": "eager"} if moe else {}
    attn = a.get("ref_attn") or "eager"
    ref = AutoModelForCausalLM.from_pretrained(a["dir"], dtype=dt, attn_implementation=attn, **eager)
    ref.eval()
    got = getattr(ref.config.get_text_config(), "rope_parameters", None) or {}
    assert {k: got.get(k) for k in rope} == rope, f"transformers reads the {a['style']}.x config's RoPE as {got}, saved {rope}"
    ref.generation_config.eos_token_id = None
    V = ref.config.get_text_config().vocab_size

    cases = []
    lens = a["full"]
    if lens:
        T = lens[0]
        rows = [torch.randint(3, V, (n,), generator=gen).tolist() for n in lens]
        ids = [r + [0] * (T - len(r)) for r in rows]
        mask = [[1] * len(r) + [0] * (T - len(r)) for r in rows]
        pos = [list(range(T)) for _ in rows]
        variants = [("right_padded", pos)]
        if a["explicit"]:
            # a start past 0 and a jump, as packed or continued sequences have
            start = a.get("explicit_start") or 5
            jump = a.get("explicit_start") or 20
            explicit = [[start + i for i in range(T)]] + [[i if i < 3 else i + jump - 3 for i in range(T)] for _ in rows[1:]]
            variants.append(("explicit_position_ids", explicit))
        for name, p in variants:
            with torch.no_grad():
                out = ref(
                    input_ids=torch.tensor(ids),
                    attention_mask=torch.tensor(mask),
                    position_ids=torch.tensor(p),
                )
            cases.append({
                "name": name, "kind": "full", "input_ids": ids, "attention_mask": mask,
                "position_ids": p, "logits": out.logits.double().tolist(),
            })
    if a.get("ref32") and cases:
        ref32 = AutoModelForCausalLM.from_pretrained(a["dir"], dtype=torch.float32, attn_implementation=attn, **eager)
        ref32.eval()
        for c in cases:
            with torch.no_grad():
                out = ref32(input_ids=torch.tensor(c["input_ids"]), attention_mask=torch.tensor(c["attention_mask"]),
                            position_ids=torch.tensor(c["position_ids"]))
            c["logits_f32"] = out.logits.double().tolist()
    if a["decode"]:
        steps = a["steps"]
        prefixes = [torch.randint(3, V, (n,), generator=gen).tolist() for n in a["decode"]]
        runs = [greedy(ref, p, steps) for p in prefixes]
        cases.append({
            "name": "greedy_generate", "kind": "decode", "prefix_ids": prefixes,
            "prefill_last_logits": [r[1][0] for r in runs],
            "first_token_ids": [r[0][0] for r in runs],
            "steps": [{
                "input_ids": [r[0][s] for r in runs],
                "position_ids": [len(p) + s for p in prefixes],
                "logits": [r[1][s + 1] for r in runs],
                "next_token_ids": [r[0][s + 1] for r in runs],
            } for s in range(steps)],
            "generated_ids": [r[0] for r in runs],
        })
        if a.get("ref32"):
            # float32's logits along the float64 run's tokens (teacher-forced
            # through generate's cache: the same prefix, then each token)
            del ref
            runs32 = [forced(ref32, p, r[0][:steps]) for p, r in zip(prefixes, runs)]
            cases[-1]["prefill_last_logits_f32"] = [r[0] for r in runs32]
            for s_, st in enumerate(cases[-1]["steps"]):
                st["logits_f32"] = [r[s_ + 1] for r in runs32]
    with open(os.path.join(a["dir"], "cases.json"), "w") as f:
        json.dump({"cases": cases}, f)
    with open(cpath) as f:
        written = json.load(f)
    return {"config": written, "files": sorted(os.listdir(a["dir"]))}


def main():
    with open(sys.argv[1]) as f:
        models = json.load(f)["models"]
    torch.set_num_threads(os.cpu_count() or 1)
    out = [make(a) for a in models]
    with open(sys.argv[2], "w") as f:
        json.dump({"models": out, "transformers": transformers.__version__, "torch": torch.__version__}, f)


if __name__ == "__main__":
    main()
