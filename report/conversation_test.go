package report

import (
	"github.com/agentrl/agentrl/trajectory/trajectorytest"

	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestRenderConversation(t *testing.T) {
	var b strings.Builder
	if err := Render(&b, trajectorytest.Full(), RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"trajectory 3-train-1-2: iteration 3, train, policy version 5",
		"task hp-0042 (hotpotqa, 2 hops), group 1, sample 2",
		"question: Qui a écrit « Le Petit Prince » ? 作者は誰? 🚀",
		"gold: Antoine de Saint-Exupéry | Saint-Exupéry",
		"evidence: 2 of its 2 supporting passages retrieved",
		"-- turn 1/2, 2 tokens, process reward 0.025, evidence 2 --",
		"  Je cherche… <tool_call>",
		`  tool call: search {"query":"Petit Prince auteur"} (ok, 12.5 ms)`,
		"    Le Petit Prince — Saint-Exupéry (1943)\n    ligne 2", // multi-line results stay indented
		"-- turn 2/2, 1 tokens, process reward -0.1 --",
		"  tool call unparsed: unexpected end of JSON input",
		"    error: could not parse tool call",
		`answer: "Antoine de Saint-Exupéry" (correct)`,
		"stop: max_tokens (truncated), outcome 1, reward 1.125 (em=1, format=0.1, neg=-0.5, process=0.025)",
		"error: tool timeout after 5s",
		"tokens: 3 prompt, 6 total, 2 action; 4321 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") || strings.Contains(out, "tokens by action mask") {
		t.Errorf("without Color and ShowMask the output has escapes or a token listing:\n%s", out)
	}
}

func TestRenderColor(t *testing.T) {
	var b strings.Builder
	if err := Render(&b, trajectorytest.Full(), RenderOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		ansiCyan + "tool call: search" + ansiReset,
		ansiRed + "tool call unparsed:" + ansiReset,
		"    " + ansiYellow + "Le Petit Prince", // results are yellow, indented outside the colour
		ansiGreen + "correct" + ansiReset,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("coloured render lacks %q", want)
		}
	}
}

func TestRenderMaskRuns(t *testing.T) {
	tr := trajectorytest.Full() // mask 0 0 0 1 1 0
	var calls [][]int32
	decode := func(ids []int32) string {
		calls = append(calls, append([]int32(nil), ids...))
		return fmt.Sprintf("<%d ids>", len(ids))
	}
	var b strings.Builder
	if err := Render(&b, tr, RenderOptions{ShowMask: true, Decode: decode}); err != nil {
		t.Fatal(err)
	}
	wantCalls := [][]int32{{151644, 0, -1}, {2147483647, 42}, {7}}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("Decode called with %v, want the mask runs %v", calls, wantCalls)
	}
	for _, want := range []string{`[0] 3 tokens: "<3 ids>"`, `[1] 2 tokens: "<2 ids>"`, `[0] 1 tokens: "<1 ids>"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("mask listing lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Render(&b, tr, RenderOptions{ShowMask: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[0] 3 tokens: 151644 0 -1\n", "[1] 2 tokens: 2147483647 42\n", "[0] 1 tokens: 7\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("id listing lacks %q:\n%s", want, b.String())
		}
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRenderErrors(t *testing.T) {
	if err := Render(&strings.Builder{}, nil, RenderOptions{}); err == nil {
		t.Error("Render(nil) must be an error")
	}
	if err := Render(failWriter{}, trajectorytest.Full(), RenderOptions{}); err == nil || !strings.Contains(err.Error(), "disk full") ||
		!strings.Contains(err.Error(), "3-train-1-2") {
		t.Errorf("Render to a failing writer: %v; want the write error naming the trajectory", err)
	}
}
