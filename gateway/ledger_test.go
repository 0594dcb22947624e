package gateway_test

import (
	"slices"
	"testing"

	"github.com/agentrl/agentrl/gateway"
)

func toks(ids ...int32) []gateway.Token {
	out := make([]gateway.Token, len(ids))
	for i, id := range ids {
		out[i] = gateway.Token{ID: id, Logprob: -float32(id) / 10}
	}
	return out
}

// A hand-made conversation, its splits written out. Request 1: prompt
// [1 2 3], completion [4 5]. Request 2 renders [1 2 3 4 5 6 7] (the
// agent appended its tool's answer, 6 7) and gets [8 9]: it extends the
// ledger, so 6 7 are observation tokens (mask 0, turn 0: they answer
// turn 0) and 8 9 action tokens of turn 1. Request 3 renders [1 2 3 10]
// (the agent dropped its history): a new segment, prompt [1 2 3 10], and
// completion [11]. Request 4 renders [1 2 3 10 11] and gets [12]: it
// extends the second segment with no observation tokens.
func TestLedgerSplits(t *testing.T) {
	var l gateway.Ledger
	links := []gateway.Link{
		l.Add([]int32{1, 2, 3}, toks(4, 5), "a"),
		l.Add([]int32{1, 2, 3, 4, 5, 6, 7}, toks(8, 9), "b"),
		l.Add([]int32{1, 2, 3, 10}, toks(11), "c"),
		l.Add([]int32{1, 2, 3, 10, 11}, toks(12), "d"),
	}
	if want := []gateway.Link{gateway.LinkStart, gateway.LinkExtend, gateway.LinkSplit, gateway.LinkExtend}; !slices.Equal(links, want) {
		t.Fatalf("links %v, want %v", links, want)
	}
	if len(l.Segments) != 2 {
		t.Fatalf("%d segments", len(l.Segments))
	}
	a, b := l.Segments[0], l.Segments[1]
	check := func(name string, got, want any) {
		t.Helper()
		if !equal(got, want) {
			t.Fatalf("%s: %v, want %v", name, got, want)
		}
	}
	check("seg 0 tokens", a.Tokens, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9})
	check("seg 0 mask", a.Mask, []uint8{0, 0, 0, 1, 1, 0, 0, 1, 1})
	check("seg 0 turns", a.TurnOf, []int16{-1, -1, -1, 0, 0, 0, 0, 1, 1})
	check("seg 0 logprobs", a.Logprobs, []float32{0, 0, 0, -0.4, -0.5, 0, 0, -0.8, -0.9})
	check("seg 0 prompt", a.PromptLen, 3)
	check("seg 1 tokens", b.Tokens, []int32{1, 2, 3, 10, 11, 12})
	check("seg 1 mask", b.Mask, []uint8{0, 0, 0, 0, 1, 1})
	check("seg 1 turns", b.TurnOf, []int16{-1, -1, -1, -1, 0, 1})
	check("seg 1 prompt", b.PromptLen, 4)
	check("seg 0 turn texts", []string{a.Turns[0].Text, a.Turns[1].Text}, []string{"a", "b"})
	check("seg 1 gen tokens", []int{b.Turns[0].GenTokens, b.Turns[1].GenTokens}, []int{1, 1})
}

// A prompt shorter than the ledger's last sequence, or equal to a prefix
// that stops inside the completion, does not extend it.
func TestLedgerTruncatedHistorySplits(t *testing.T) {
	var l gateway.Ledger
	l.Add([]int32{1, 2}, toks(3, 4), "")
	if got := l.Add([]int32{1, 2, 3}, toks(5), ""); got != gateway.LinkSplit {
		t.Fatalf("a prompt ending inside the completion: %v", got)
	}
	if got := l.Add([]int32{1, 2, 9, 3, 5}, toks(6), ""); got != gateway.LinkSplit {
		t.Fatalf("a prompt that rewrote a token: %v", got)
	}
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case []int32:
		return slices.Equal(x, b.([]int32))
	case []uint8:
		return slices.Equal(x, b.([]uint8))
	case []int16:
		return slices.Equal(x, b.([]int16))
	case []float32:
		y := b.([]float32)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if d := x[i] - y[i]; d > 1e-6 || d < -1e-6 {
				return false
			}
		}
		return true
	case []string:
		return slices.Equal(x, b.([]string))
	case []int:
		return slices.Equal(x, b.([]int))
	}
	return a == b
}
