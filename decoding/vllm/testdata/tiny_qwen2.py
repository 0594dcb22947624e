"""The reference side of decoding/vllm's check against a real vLLM server.

Usage: tiny_qwen2.py IN.json OUT.json. IN names two folders and a prompt;
two random tiny Qwen2 models (seeds seed_a and seed_b) are saved there by
transformers, in float32 safetensors. OUT holds what transformers itself
computes for each model: its greedy continuation of the prompt (ids and
the log-softmax of each chosen id) and its log-probabilities of each prompt
token after the first.
"""
import json
import sys

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def make(seed, folder):
    # Heads of 32: vLLM's CPU attention takes head sizes of 32 and up.
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=512, hidden_size=128, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, tie_word_embeddings=False,
        initializer_range=0.05,
    )
    model = Qwen2ForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(folder, safe_serialization=True)
    return model


def logprobs(model, ids):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].to(torch.float32)
    return torch.log_softmax(logits, dim=-1)


def main():
    with open(sys.argv[1]) as f:
        inp = json.load(f)
    prompt = inp["prompt"]
    out = {}
    for name, seed, folder in (("a", inp["seed_a"], inp["dir_a"]), ("b", inp["seed_b"], inp["dir_b"])):
        model = make(seed, folder)
        lp = logprobs(model, prompt)
        out["prompt_logprobs_" + name] = [lp[i - 1, prompt[i]].item() for i in range(1, len(prompt))]
        ids, tokens, lps = list(prompt), [], []
        for _ in range(inp["max_tokens"]):
            step = logprobs(model, ids)[-1]
            tok = int(torch.argmax(step))
            tokens.append(tok)
            lps.append(step[tok].item())
            ids.append(tok)
        out["greedy_tokens_" + name], out["greedy_logprobs_" + name] = tokens, lps
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
