"""Loads what agentrl exported with the Hugging Face libraries, for
cmd/trainer/interop_test.go.

argv: in.json out.json. in.json:
  folders  [{"dir": a model folder} or {"base": a model folder, "adapter":
           a PEFT adapter folder}; "tokenizer": "auto" or "tokenizers";
           "ids": token ids, one row, for the logits]
  texts    strings to tokenize

A model folder is loaded with AutoModelForCausalLM.from_pretrained and
AutoTokenizer.from_pretrained (with "tokenizers": its tokenizer.json with
the tokenizers library's Tokenizer.from_file); an adapter with
PeftModel.from_pretrained over its base (the tokenizer is the base's). The
model runs in float64.
out.json: {"folders": [{"logits": [position][vocab], "ids": [text][ids],
"architectures", "model_type"}]}.
"""

import json
import os
import sys

import peft
import tokenizers
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def load(f):
    path = f.get("dir") or f["base"]
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64, attn_implementation="eager")
    if f.get("adapter"):
        model = peft.PeftModel.from_pretrained(model, f["adapter"])
        model.double()
    if f["tokenizer"] == "tokenizers":
        tok = tokenizers.Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        return model.eval(), lambda t: tok.encode(t, add_special_tokens=False).ids
    tok = AutoTokenizer.from_pretrained(path)
    return model.eval(), lambda t: tok.encode(t, add_special_tokens=False)


def main():
    with open(sys.argv[1]) as fh:
        a = json.load(fh)
    out = []
    for f in a["folders"]:
        model, encode = load(f)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([f["ids"]])).logits[0].tolist()
        cfg = model.config
        out.append({
            "logits": logits,
            "ids": [encode(t) for t in a["texts"]],
            "architectures": cfg.architectures,
            "model_type": cfg.model_type,
        })
    with open(sys.argv[2], "w") as fh:
        json.dump({"folders": out}, fh)


if __name__ == "__main__":
    main()
