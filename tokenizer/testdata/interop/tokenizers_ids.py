"""Encodes texts with Hugging Face tokenizers (no special tokens added) and
decodes the ids back, special tokens kept.

argv: in.json {"tokenizer": tokenizer.json path, "texts": [...]}, out.json.
Answer: {"ids": [[...]], "decoded": [...]}.
"""
import json, sys
from tokenizers import Tokenizer

req = json.load(open(sys.argv[1]))
tok = Tokenizer.from_file(req["tokenizer"])
encs = tok.encode_batch(req["texts"], add_special_tokens=False)
ids = [e.ids for e in encs]
decoded = tok.decode_batch(ids, skip_special_tokens=False)
json.dump({"ids": ids, "decoded": decoded}, open(sys.argv[2], "w"))
