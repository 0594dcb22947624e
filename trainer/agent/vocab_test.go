package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/torch"
)

// A tokenizer fits a model whose vocabulary has at least its tokens; one
// token more than the model has rows for is refused, naming both sizes and
// the ids past the end.
func TestCheckVocab(t *testing.T) {
	tok, err := tokenizer.BuildWordLevel([]string{"one two three"}, toolcall.SpecialTokens())
	if err != nil {
		t.Fatal(err)
	}
	n := tok.VocabSize()
	for _, vocab := range []int{n, n + 5} {
		if err := CheckVocab(tok, torch.Config{Vocab: vocab}); err != nil {
			t.Errorf("vocab_size %d for %d tokens: %v", vocab, n, err)
		}
	}
	err = CheckVocab(tok, torch.Config{Vocab: n - 2})
	want := fmt.Sprintf("the tokenizer has %d tokens but the model's vocab_size is %d: ids %d to %d are outside", n, n-2, n-2, n-1)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("vocab_size %d for %d tokens: %v, want %q", n-2, n, err, want)
	}
}
