// Package tokenizer reads Hugging Face tokenizer.json files and encodes and
// decodes text exactly as the reference implementation does for the
// components it supports: byte-level BPE (Qwen2/2.5/3, Llama-3, GPT-2 style)
// and WordLevel models, the NFC normalizer, the Split pre-tokenizer with the
// Qwen, Llama-3 or GPT-2 regular expression, the ByteLevel pre-tokenizer and
// decoder, and added/special tokens. Anything else in a tokenizer.json is
// refused with an error naming the component.
//
// On top of the tokenizer, ChatFormat renders conversations as the chat
// templates of Qwen2.5, Qwen3 and Llama 3.1/3.2/3.3 do (each written by hand,
// the family recognised from the checkpoint's template, any other template
// refused) straight to token ids, turn by turn, with the action mask the RL
// trainer needs; BuildWordLevel makes tiny vocabularies for CPU demos.
package tokenizer
