package trajectory

import "testing"

func TestToolsOK(t *testing.T) {
	ok, failed := ToolCall{Name: "search", OK: true}, ToolCall{Name: "lookup"}
	for _, c := range []struct {
		name  string
		calls []ToolCall
		want  bool
	}{
		{"no calls", nil, false},
		{"one that succeeded", []ToolCall{ok}, true},
		{"all succeeded", []ToolCall{ok, ok}, true},
		{"one of several failed", []ToolCall{ok, failed}, false},
		{"unparsed", []ToolCall{{ParseError: "invalid JSON"}}, false},
	} {
		if got := (Turn{Calls: c.calls}).ToolsOK(); got != c.want {
			t.Errorf("%s: ToolsOK() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTruncated(t *testing.T) {
	for _, s := range []StopReason{StopAnswer, StopNoToolCall, StopError, StopCancelled} {
		if s.Truncated() {
			t.Errorf("%s counts as truncated", s)
		}
	}
	for _, s := range []StopReason{StopMaxTurns, StopMaxTokens} {
		if !s.Truncated() {
			t.Errorf("%s does not count as truncated", s)
		}
	}
}

func TestActionTokens(t *testing.T) {
	tr := Trajectory{Mask: []uint8{0, 0, 1, 1, 0, 1}}
	if n := tr.ActionTokens(); n != 3 {
		t.Errorf("ActionTokens() = %d, want 3", n)
	}
}
