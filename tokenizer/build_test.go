package tokenizer

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/hubcache/hubcachetest"
	"github.com/agentrl/agentrl/toolcall"
)

func TestBuildWordLevelIDs(t *testing.T) {
	tok, err := BuildWordLevel([]string{"a b a", "<|im_start|>x\n"}, []string{"<|im_start|>", "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	// Specials first (0, 1), then <unk> (2), then the pieces in byte order:
	// "\n" (0x0a) < " a" < " b" (0x20...) < "a" < "x".
	want := []string{"<|im_start|>", "<|im_end|>", "<unk>", "\n", " a", " b", "a", "x"}
	if tok.VocabSize() != len(want) {
		t.Fatalf("VocabSize = %d, want %d", tok.VocabSize(), len(want))
	}
	for id, s := range want {
		if got := tok.IDToken(int32(id)); got != s {
			t.Errorf("IDToken(%d) = %q, want %q", id, got, s)
		}
	}
	cases := []struct {
		text string
		ids  []int32
	}{
		{"a b a", []int32{6, 5, 4}},
		{"<|im_start|>x\n<|im_end|>", []int32{0, 7, 3, 1}},
		{"zz a", []int32{2, 4}}, // "zz" is one unseen piece
	}
	for _, c := range cases {
		if got := tok.Encode(c.text); !slices.Equal(got, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.ids)
		}
	}
	if got := tok.Decode([]int32{0, 7, 3, 1, 6}, false); got != "<|im_start|>x\n<|im_end|>a" {
		t.Errorf("Decode = %q", got)
	}
	// <|...|> specials and <unk> are special; Decode can skip them.
	if got := tok.Decode([]int32{0, 7, 2, 1, 6}, true); got != "xa" {
		t.Errorf("Decode(skipSpecial) = %q", got)
	}
	// EOS is <|im_end|>; with no <|endoftext|>, PAD falls back to EOS.
	if tok.EOS() != 1 || tok.PAD() != 1 {
		t.Errorf("EOS, PAD = %d, %d; want 1, 1", tok.EOS(), tok.PAD())
	}
}

func TestBuildWordLevelRoundTrip(t *testing.T) {
	texts := []string{twoCallText, "Hello, world!  It's   2024.\n\n\tTabs\r\nand 你好 🤖"}
	tok, err := BuildWordLevel(texts, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	unk, _ := tok.TokenID(UnknownToken)
	for _, text := range texts {
		ids := tok.Encode(text)
		if slices.Contains(ids, unk) {
			t.Errorf("a seen text has <unk>: %v", ids)
		}
		if got := tok.Decode(ids, false); got != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, got)
		}
	}
	// Seen pieces recombined also round-trip.
	if s := "Hello It's 你好"; tok.Decode(tok.Encode(s), false) != s {
		t.Errorf("recombined pieces do not round-trip")
	}
}

func TestSaveLoadWordLevel(t *testing.T) {
	tok, err := BuildWordLevel([]string{twoCallText}, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameTokenizer(t, tok, back, twoCallText)
	if back.EOS() != tok.EOS() || back.PAD() != tok.PAD() || tok.EOS() != 2 || tok.PAD() != 0 {
		t.Errorf("EOS, PAD = %d, %d after load, %d, %d before; want 2 (<|im_end|>), 0 (<|endoftext|>)", back.EOS(), back.PAD(), tok.EOS(), tok.PAD())
	}
	resavedSame(t, back, dir)
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cfg, []byte(`"chat_template": "{%- if tools %}`)) || !bytes.Contains(cfg, []byte(`"eos_token": "<|im_end|>"`)) {
		t.Errorf("tokenizer_config.json lacks the chat template or eos token:\n%.300s", cfg)
	}
}

// sameTokenizer checks that two tokenizers have the same tokens and flags
// and encode text alike.
func sameTokenizer(t *testing.T, a, b *Tokenizer, text string) {
	t.Helper()
	if !slices.Equal(a.tokens, b.tokens) || !slices.Equal(a.special, b.special) || !maps.Equal(a.addedID, b.addedID) {
		t.Fatal("tokens, special flags or added tokens differ")
	}
	if !slices.Equal(a.Encode(text), b.Encode(text)) {
		t.Error("encodings differ")
	}
}

// resavedSame saves tok into a new folder and compares the files with dir's.
func resavedSame(t *testing.T, tok *Tokenizer, dir string) {
	t.Helper()
	dir2 := t.TempDir()
	if err := tok.Save(dir2); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		a, errA := os.ReadFile(filepath.Join(dir, name))
		b, errB := os.ReadFile(filepath.Join(dir2, name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs after Load and Save again (%v, %v)", name, errA, errB)
		}
	}
}

func TestChatFormatOnWordLevel(t *testing.T) {
	tok, err := BuildWordLevel([]string{twoCallText}, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int32 {
		v, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	if got, want := c.StopIDs(), []int32{id("<|im_end|>"), id("<|endoftext|>"), id("</tool_call>")}; !slices.Equal(got, want) {
		t.Errorf("StopIDs = %v, want %v", got, want)
	}
	ids, mask, err := c.Render(twoCallConversation, []json.RawMessage{searchTool}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Decode(ids, false); got != twoCallText {
		t.Fatalf("Decode(Render) = %q", got)
	}
	var gen []int32
	for i := range ids {
		if mask[i] == 1 {
			gen = append(gen, ids[i])
		}
	}
	if got := tok.Decode(gen, false); got != gen1+gen2+gen3 {
		t.Errorf("generated tokens decode to %q", got)
	}
	// Every Qwen tag is a single token.
	for _, s := range QwenSpecials {
		if got := tok.Encode(s); len(got) != 1 {
			t.Errorf("Encode(%q) = %v, want one token", s, got)
		}
	}
	if strings.Contains(tok.Decode(ids, true), "<|im_start|>") {
		t.Error("Decode(skipSpecial) kept <|im_start|>")
	}
}

func TestBuildWordLevelErrors(t *testing.T) {
	if _, err := BuildWordLevel([]string{"x"}, []string{""}); err == nil {
		t.Error("an empty special was accepted")
	}
}

// A model id loads the tokenizer of its snapshot in the Hugging Face
// cache (files linked into blobs/, as huggingface_hub writes them); an id
// that is not there is an error naming the cache.
func TestLoadFromHubCache(t *testing.T) {
	tok, err := BuildWordLevel([]string{twoCallText}, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := tok.Save(src); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	hubcachetest.Put(t, cache, "org/words", "main", "0123456789abcdef0123456789abcdef01234567", src)
	back, err := Load("org/words")
	if err != nil {
		t.Fatal(err)
	}
	sameTokenizer(t, tok, back, twoCallText)
	if _, err := Load("org/other"); err == nil || !strings.Contains(err.Error(), "in the Hugging Face cache "+cache+" (from $HF_HUB_CACHE)") {
		t.Errorf("absent id: %v", err)
	}
}

// A word-level tokenizer built as Qwen3.5's carries Qwen3.5's published
// template, saved and read back: its chat format is Qwen3.5's, writing
// calls in XML, whose every piece the tokenizer holds when the rendered
// text was among its texts. Families whose template the package does not
// carry are refused by name.
func TestBuildWordLevelAsQwen35(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Search."}, {Role: "user", Content: "Where is Tarn?"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query": "Tarn"}`)}}},
		{Role: "tool", Content: "Tarn is in Oc."}, {Role: "assistant", Content: "<answer>Oc</answer>"}}
	boot, err := BuildWordLevelAs(Qwen35, nil, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := NewChatFormat(boot)
	if err != nil {
		t.Fatal(err)
	}
	text, err := bf.RenderText(msgs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	call := "<tool_call>\n<function=search>\n<parameter=query>\nTarn\n</parameter>\n</function>\n</tool_call>"
	if !strings.Contains(text, call) {
		t.Fatalf("rendered text lacks the XML call %q:\n%s", call, text)
	}
	tok, err := BuildWordLevelAs(Qwen35, []string{text}, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewChatFormat(back)
	if err != nil {
		t.Fatal(err)
	}
	if f.Family() != Qwen35 || f.CallSyntax() != toolcall.QwenXML {
		t.Errorf("format %s writing %v calls, want qwen3.5 writing %v", f.Family(), f.CallSyntax(), toolcall.QwenXML)
	}
	unk, _ := back.TokenID(UnknownToken)
	if ids := back.Encode(call); slices.Contains(ids, unk) || back.Decode(ids, false) != call {
		t.Errorf("the XML call does not round-trip: %v", ids)
	}
	if _, err := BuildWordLevelAs(Llama31, nil, QwenSpecials); err == nil || !strings.Contains(err.Error(), `"llama3.1"`) {
		t.Errorf("built as Llama 3.1: %v, want a refusal naming it", err)
	}
}
