package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
)

// referenceCases is the layout of reference_ids.json: texts with the ids the
// reference implementation gives them (add_special_tokens=false).
type referenceCases struct {
	Generator string `json:"generator"`
	Cases     []struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"cases"`
}

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
)

// qwenDir is the shared Qwen3 tokenizer folder, whose ids the tests'
// hand-worked cases use.
func qwenDir(t testing.TB) string {
	return fixtures.Path(t, "data", "tokenizers", "qwen")
}

// qwen loads the shared Qwen3 tokenizer once for all tests.
func qwen(t testing.TB) *Tokenizer {
	t.Helper()
	dir := qwenDir(t)
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(dir) })
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenTok
}

// TestReferenceIDs checks the shared reference_ids.json with the shared
// Qwen3 tokenizer; or, when set, the cases file $AGENTRL_TOKENIZER_CASES
// with the tokenizer folder $AGENTRL_TOKENIZER_DIR (default: the shared one).
func TestReferenceIDs(t *testing.T) {
	path := os.Getenv("AGENTRL_TOKENIZER_CASES")
	if path == "" {
		checkCases(t, qwen(t), filepath.Join(qwenDir(t), "reference_ids.json"))
		return
	}
	tok := qwen(t)
	if dir := os.Getenv("AGENTRL_TOKENIZER_DIR"); dir != "" {
		var err error
		if tok, err = Load(dir); err != nil {
			t.Fatal(err)
		}
	}
	checkCases(t, tok, path)
}

// TestJSReferenceCases checks ids that @huggingface/tokenizers (the pure-JS
// port of the reference) gave for edge cases, HotpotQA passages and random
// strings of tricky characters, with the shared Qwen tokenizer.
func TestJSReferenceCases(t *testing.T) {
	checkCases(t, qwen(t), filepath.Join("testdata", "hf_js_cases.json"))
}

// checkCases encodes every text of a cases file and decodes its ids.
func checkCases(t *testing.T, tok *Tokenizer, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref referenceCases
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(ref.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	for i, c := range ref.Cases {
		if got := tok.Encode(c.Text); !slices.Equal(got, c.IDs) {
			t.Errorf("%s case %d %q:\n got %v\nwant %v", path, i, c.Text, got, c.IDs)
		}
		if back := tok.Decode(c.IDs, false); back != c.Text {
			t.Errorf("%s case %d: Decode gives %q, want %q", path, i, back, c.Text)
		}
	}
	t.Logf("%d cases from %s", len(ref.Cases), path)
}
