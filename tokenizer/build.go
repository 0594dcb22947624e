package tokenizer

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/toolcall"
)

// qwenChatTemplate is the chat template of Qwen3's tokenizer_config.json,
// written into the tokenizer_config.json of built tokenizers.
//
//go:embed qwen_chat_template.jinja
var qwenChatTemplate string

// qwen35ChatTemplate is Qwen3.5's published chat template (that of
// Qwen/Qwen3.5-4B, as llama.cpp vendors it: testdata/templates/SOURCES.md),
// written into the tokenizer_config.json of tokenizers built for
// Qwen3.5-shaped tiny models, and the interop tests' copy of it.
//
//go:embed qwen35_chat_template.jinja
var qwen35ChatTemplate string

// builtTemplates are the chat templates BuildWordLevelAs can write, by
// family.
var builtTemplates = map[Family]string{Qwen3: qwenChatTemplate, Qwen35: qwen35ChatTemplate}

// UnknownToken is the token BuildWordLevel gives to pieces it has not seen.
const UnknownToken = "<unk>"

// QwenSpecials are the added tokens the chat format of this package uses,
// for BuildWordLevel: the first three are special (skipped by Decode on
// request), the others are added tokens as in Qwen3's own file.
var QwenSpecials = toolcall.SpecialTokens()

// BuildWordLevel makes a tiny WordLevel tokenizer for CPU demos. The texts
// are cut at the specials, and the rest is pre-tokenized with Qwen's Split
// pattern (so " word", "\":" and " \"" are pieces, and whitespace stays
// inside pieces); every distinct piece becomes a token. Ids are given in a
// fixed order: the specials as listed, then UnknownToken, then the pieces in
// byte order. Specials written like "<|name|>" (and UnknownToken) are
// special tokens, the others plain added tokens. Decoding concatenates tokens
// (the Fuse decoder), so Decode(Encode(s)) == s for any s made of seen pieces.
// The tokenizer_config.json saved with it carries Qwen3's chat template, with
// "<|im_end|>" as eos and "<|endoftext|>" as pad when they are specials.
func BuildWordLevel(texts []string, specials []string) (*Tokenizer, error) {
	return BuildWordLevelAs(Qwen3, texts, specials)
}

// BuildWordLevelAs is BuildWordLevel with family's chat template in the
// tokenizer_config.json, so that NewChatFormat lays conversations out as
// that family does: Qwen3, or Qwen35 (tool calls in XML). The other
// families are refused by name.
func BuildWordLevelAs(family Family, texts []string, specials []string) (*Tokenizer, error) {
	template, ok := builtTemplates[family]
	if !ok {
		return nil, fmt.Errorf("build word-level tokenizer: chat format %q: only %s and %s can be built", family, Qwen3, Qwen35)
	}
	vocab := vocabJSON{}
	var added []addedToken
	addToken := func(content string, special bool) {
		if _, ok := vocab[content]; ok {
			return
		}
		id := int32(len(vocab))
		vocab[content] = id
		added = append(added, addedToken{ID: id, Content: content, Special: special})
	}
	for _, s := range specials {
		if s == "" {
			return nil, fmt.Errorf("build word-level tokenizer: empty special token")
		}
		addToken(s, strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>"))
	}
	addToken(UnknownToken, true)

	ids := map[string]int32{}
	for _, a := range added {
		ids[a.Content] = a.ID
	}
	m := newMatcher(ids)
	split := chatSplitter{maxDigits: 1}
	seen := map[string]bool{}
	for _, text := range texts {
		for len(text) > 0 {
			seg := text
			start, end := -1, -1
			if m != nil {
				start, end, _ = m.find(text)
			}
			if start >= 0 {
				seg = text[:start]
			}
			for i := 0; i < len(seg); {
				j := split.next(seg, i)
				seen[seg[i:j]] = true
				i = j
			}
			if start < 0 {
				break
			}
			text = text[end:]
		}
	}
	pieces := make([]string, 0, len(seen))
	for p := range seen {
		if _, ok := vocab[p]; !ok {
			pieces = append(pieces, p)
		}
	}
	sort.Strings(pieces)
	for _, p := range pieces {
		vocab[p] = int32(len(vocab))
	}

	unk := UnknownToken
	f := fileJSON{
		Version:      "1.0",
		AddedTokens:  added,
		PreTokenizer: mustJSON(map[string]any{"type": "Split", "pattern": map[string]string{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false}),
		Decoder:      mustJSON(map[string]string{"type": "Fuse"}),
		Model:        modelJSON{Type: "WordLevel", Vocab: vocab, UnkToken: &unk},
	}
	config := map[string]json.RawMessage{
		"tokenizer_class":              mustJSON("PreTrainedTokenizerFast"),
		"chat_template":                mustJSON(template),
		"clean_up_tokenization_spaces": mustJSON(false),
		"model_max_length":             mustJSON(131072),
		"unk_token":                    mustJSON(UnknownToken),
	}
	if _, ok := vocab[toolcall.TurnEnd]; ok {
		config["eos_token"] = mustJSON(toolcall.TurnEnd)
	}
	if _, ok := vocab[toolcall.EndOfText]; ok {
		config["pad_token"] = mustJSON(toolcall.EndOfText)
	}
	t, err := newTokenizer(f, config)
	if err != nil {
		return nil, fmt.Errorf("build word-level tokenizer: %w", err)
	}
	return t, nil
}

// mustJSON marshals values that always marshal (strings, numbers, maps of
// them) without HTML escaping.
func mustJSON(v any) json.RawMessage {
	b, err := marshalNoEscape(v)
	if err != nil {
		panic(fmt.Sprintf("tokenizer: marshal %T: %v", v, err))
	}
	return b
}
