package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// RenderLimit agrees with Render at every limit around a conversation's
// exact length: within it the same ids, one token short of it over. A
// conversation of more messages than the limit, or one long message, is
// found over without encoding it whole.
func TestRenderLimit(t *testing.T) {
	c := qwenChat(t)
	msgs := []Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: "Who directed Ed Wood? Ünïcödé, too."},
		{Role: "assistant", Content: "Tim Burton."}, {Role: "user", Content: strings.Repeat("and then ", 20)}}
	want, _, err := c.Render(msgs, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	n := len(want)
	for _, limit := range []int{1, 5, n - 20, n - 1, n, n + 1, 2 * n} {
		ids, over, err := c.RenderLimit(msgs, nil, true, limit)
		switch {
		case err != nil:
			t.Fatal(err)
		case over != (n > limit):
			t.Errorf("limit %d of %d tokens: over %v", limit, n, over)
		case !over && !slices.Equal(ids, want):
			t.Errorf("limit %d: ids differ from Render's", limit)
		case over && !slices.Equal(ids[:min(len(ids), limit)], want[:min(len(ids), limit)]):
			t.Errorf("limit %d: the ids are not a prefix of Render's", limit)
		}
	}
	many := make([]Message, 300)
	for i := range many {
		many[i] = Message{Role: "user", Content: "hi"}
	}
	if _, over, _ := c.RenderLimit(many, nil, true, 256); !over {
		t.Error("300 messages fit 256 tokens")
	}
	long := []Message{{Role: "user", Content: strings.Repeat("Hello there! ", 1<<20)}}
	ids, over, err := c.RenderLimit(long, nil, true, 256)
	if err != nil || !over || len(ids) > 2*256 {
		t.Errorf("a 13 MB message: over %v, %d ids kept, %v", over, len(ids), err)
	}
}
