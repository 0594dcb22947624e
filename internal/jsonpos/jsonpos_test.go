package jsonpos

import (
	"encoding/json"
	"testing"
)

// Lines counted by hand in a three-line document.
func TestLines(t *testing.T) {
	data := []byte("[\n  {\"a\": 1},\n  {\"a\": }\n]")
	// Offset 1 is the newline after '['; the next value starts on line 2.
	if got := LineAt(data, 1); got != 2 {
		t.Fatalf("LineAt = %d, want 2", got)
	}
	// After the first record (offset 12, the comma): the next value is on line 3.
	if got := LineAt(data, 12); got != 3 {
		t.Fatalf("LineAt after the comma = %d, want 3", got)
	}
	var v any
	err := json.Unmarshal(data, &v)
	if got := ErrLine(data, 0, err); got != 3 {
		t.Fatalf("ErrLine of the syntax error = %d, want 3 (%v)", got, err)
	}
}
