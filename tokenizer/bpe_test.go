package tokenizer

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyFile is a small byte-level BPE tokenizer.json: byte b has id b (its
// byte-level rune as the token), and the merges listed get ids from 256 on.
func tinyFile(merges [][2]string, extra map[string]any) map[string]any {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[byteString[b]] = b
	}
	var list []any
	for _, m := range merges {
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = len(vocab)
		}
		list = append(list, []string{m[0], m[1]})
	}
	f := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": []any{},
		"normalizer":     map[string]any{"type": "NFC"},
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": list},
	}
	for k, v := range extra {
		if k == "model" {
			maps.Copy(f["model"].(map[string]any), v.(map[string]any))
			continue
		}
		f[k] = v
	}
	return f
}

// loadFile writes f as dir/tokenizer.json and loads it.
func loadFile(t *testing.T, f map[string]any) (*Tokenizer, error) {
	t.Helper()
	dir := t.TempDir()
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(dir)
}

func mustLoad(t *testing.T, f map[string]any) *Tokenizer {
	t.Helper()
	tok, err := loadFile(t, f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// theMerges: rank 0 Ġ+t -> Ġt (256), 1 h+e -> he (257), 2 Ġt+he -> Ġthe
// (258), 3 t+h -> th (259), 4 a+a -> aa (260).
var theMerges = [][2]string{{"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"t", "h"}, {"a", "a"}}

func TestBPEMergeOrder(t *testing.T) {
	tok := mustLoad(t, tinyFile(theMerges, nil))
	cases := []struct {
		text string
		ids  []int32
	}{
		// " the": Ġ t h e; Ġ+t (rank 0), h+e (1), Ġt+he (2) -> [258].
		{" the", []int32{258}},
		// "the": t+h (3) and h+e (1) compete; he wins, and t+he is no
		// merge -> "t"=116, "he"=257.
		{"the", []int32{116, 257}},
		// "aaa": a+a at 0 and 1 with the same rank; the leftmost merges
		// first -> "aa"=260, "a"=97.
		{"aaa", []int32{260, 97}},
		// GPT-2 pattern: " the" | " 12" | "!"; Ġ+1 and 1+2 have no merge,
		// so " 12" stays bytes 0x20, '1', '2' = ids 32, 49, 50; "!" is 33.
		{" the 12!", []int32{258, 32, 49, 50, 33}},
	}
	for _, c := range cases {
		if got := tok.Encode(c.text); !slices.Equal(got, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.ids)
		}
		if got := tok.Decode(c.ids, false); got != c.text {
			t.Errorf("Decode(%v) = %q, want %q", c.ids, got, c.text)
		}
	}
}

func TestBPEMergesAsStrings(t *testing.T) {
	var lines []string
	for _, m := range theMerges {
		lines = append(lines, m[0]+" "+m[1])
	}
	f := tinyFile(theMerges, map[string]any{"model": map[string]any{"merges": lines}})
	tok := mustLoad(t, f)
	if got := tok.Encode(" the"); !slices.Equal(got, []int32{258}) {
		t.Errorf(`Encode(" the") = %v, want [258]`, got)
	}
	f = tinyFile(theMerges, map[string]any{"model": map[string]any{"merges": []string{"Ġ t", "Ġt he x"}}})
	if _, err := loadFile(t, f); err == nil || !strings.Contains(err.Error(), "merges") {
		t.Errorf("a three-token merge line gave %v", err)
	}
}

func TestBPEIgnoreMerges(t *testing.T) {
	// "Ġxyz" (id 261) is in the vocabulary but no merge leads to it.
	f := tinyFile(theMerges, nil)
	f["model"].(map[string]any)["vocab"].(map[string]int)["Ġxyz"] = 261
	tok := mustLoad(t, f)
	// Without ignore_merges: Ġ x y z as bytes 0x20 (id 32), x, y, z.
	if got := tok.Encode(" xyz"); !slices.Equal(got, []int32{32, 120, 121, 122}) {
		t.Errorf("merges: Encode(\" xyz\") = %v", got)
	}
	f["model"].(map[string]any)["ignore_merges"] = true
	tok = mustLoad(t, f)
	if got := tok.Encode(" xyz"); !slices.Equal(got, []int32{261}) {
		t.Errorf("ignore_merges: Encode(\" xyz\") = %v, want [261]", got)
	}
}

func TestNormalizedAddedToken(t *testing.T) {
	// "é" (U+00E9) matched after NFC, so "e" + U+0301 finds it too;
	// "<x>" is matched in the raw text.
	f := tinyFile(nil, map[string]any{"added_tokens": []any{
		map[string]any{"id": 300, "content": "é", "normalized": true, "special": false},
		map[string]any{"id": 301, "content": "<x>", "normalized": false, "special": true},
	}})
	tok := mustLoad(t, f)
	for _, text := range []string{"é", "e\u0301"} {
		if got := tok.Encode(text); !slices.Equal(got, []int32{300}) {
			t.Errorf("Encode(%q) = %v, want [300]", text, got)
		}
	}
	// "a" | <x> | "b" | é | "b"; Decode(skipSpecial) drops only the
	// special one. As in the reference, added tokens go through the
	// ByteLevel decoder too, where "é" (U+00E9) is the rune of byte 0xE9.
	ids := tok.Encode("a<x>béb")
	if want := []int32{97, 301, 98, 300, 98}; !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if got := tok.Decode(ids, true); got != "ab\xe9b" {
		t.Errorf("Decode(skipSpecial) = %q, want %q", got, "ab\xe9b")
	}
	if tok.VocabSize() != 302 {
		t.Errorf("VocabSize = %d, want 302", tok.VocabSize())
	}
}

func TestSaveLoadBPE(t *testing.T) {
	f := tinyFile(theMerges, map[string]any{"added_tokens": []any{
		map[string]any{"id": 300, "content": "<|im_end|>", "special": true},
	}})
	tok := mustLoad(t, f)
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameTokenizer(t, tok, back, " the aaa<|im_end|>")
	if got := back.Encode(" the"); !slices.Equal(got, []int32{258}) {
		t.Errorf("merges lost: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		t.Error("Save wrote a tokenizer_config.json the tokenizer did not have")
	}
}

// Loading the shared Qwen tokenizer and saving it gives back the same file,
// byte for byte: vocabulary in id order, merges as pairs, components as read.
func TestSaveQwenIsIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 11 MB")
	}
	tok := qwen(t)
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join(qwenDir(t), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(orig) != string(saved) {
		t.Errorf("saved tokenizer.json differs from the original (%d vs %d bytes)", len(saved), len(orig))
	}
}

func TestUnsupportedComponents(t *testing.T) {
	bpeOnly := func(k string, v any) map[string]any {
		return tinyFile(nil, map[string]any{k: v})
	}
	cases := []struct {
		name string
		file map[string]any
		want string // the error names the component
	}{
		{"normalizer", bpeOnly("normalizer", map[string]any{"type": "Lowercase"}), `normalizer "Lowercase"`},
		{"pre-tokenizer", bpeOnly("pre_tokenizer", map[string]any{"type": "Whitespace"}), `pre_tokenizer "Whitespace"`},
		{"split pattern", bpeOnly("pre_tokenizer", map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\w+`}, "behavior": "Isolated"}), `pattern "\\w+"`},
		{"split behavior", bpeOnly("pre_tokenizer", map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Removed"}), `behavior "Removed"`},
		{"prefix space", bpeOnly("pre_tokenizer", map[string]any{"type": "ByteLevel", "add_prefix_space": true}), "add_prefix_space"},
		{"post-processor", bpeOnly("post_processor", map[string]any{"type": "BertProcessing"}), `post_processor "BertProcessing"`},
		{"decoder", bpeOnly("decoder", map[string]any{"type": "WordPiece"}), `decoder "WordPiece"`},
		{"truncation", bpeOnly("truncation", map[string]any{"max_length": 8}), "truncation"},
		{"model", bpeOnly("model", map[string]any{"type": "Unigram"}), `model "Unigram"`},
		{"byte fallback", bpeOnly("model", map[string]any{"byte_fallback": true}), "byte_fallback"},
		{"dropout", bpeOnly("model", map[string]any{"dropout": 0.1}), "dropout"},
		{"BPE without ByteLevel", bpeOnly("pre_tokenizer", nil), "ByteLevel"},
		{"lstrip", bpeOnly("added_tokens", []any{map[string]any{"id": 300, "content": "<m>", "lstrip": true}}), "lstrip"},
		{"merge out of vocabulary", tinyFile(nil, map[string]any{"model": map[string]any{"merges": [][]string{{"q", "zz"}}}}), `merge 0 ("q", "zz")`},
	}
	for _, c := range cases {
		_, err := loadFile(t, c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of an empty folder gave no error")
	}
}

func TestWordLevelFile(t *testing.T) {
	f := map[string]any{
		"version": "1.0", "added_tokens": []any{},
		"pre_tokenizer": map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
		"decoder":       nil,
		"model":         map[string]any{"type": "WordLevel", "vocab": map[string]int{"<unk>": 0, "a": 1, " b": 2}, "unk_token": "<unk>"},
	}
	tok := mustLoad(t, f)
	// "a" | " b" | " c" (unknown) ; no decoder: tokens joined by spaces.
	ids := tok.Encode("a b c")
	if !slices.Equal(ids, []int32{1, 2, 0}) {
		t.Errorf("Encode = %v, want [1 2 0]", ids)
	}
	if got := tok.Decode(ids, false); got != "a  b <unk>" {
		t.Errorf("Decode = %q, want %q", got, "a  b <unk>")
	}
	f["model"] = map[string]any{"type": "WordLevel", "vocab": map[string]int{"a": 0}, "unk_token": "<unk>"}
	if _, err := loadFile(t, f); err == nil || !strings.Contains(err.Error(), "unk_token") {
		t.Errorf("WordLevel without its unk token: %v", err)
	}
}
