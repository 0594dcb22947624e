package torch

import (
	"math"
	"strings"
	"testing"
)

// A CUDA graph captured on the wrong device or stream records nothing, and
// libtorch only warns about it; every replay would then leave stale logits.
// The capture poisons the graph's output with NaN, replays it once and
// checks it against the eager step: an unwritten output, or other logits,
// is an error.
func TestGraphReplayCheck(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	s := NewScope()
	defer s.Close()
	eager := s.Float32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	nan := float32(math.NaN())
	for _, c := range []struct {
		name     string
		replayed []float32
		want     string // "" is no error
	}{
		{"the eager logits", []float32{1, 2, 3, 4, 5, 6}, ""},
		{"within rounding", []float32{1, 2, 3, 4, 5, 6.001}, ""},
		{"nothing recorded", []float32{nan, nan, nan, nan, nan, nan}, "recorded nothing"},
		{"one row unwritten", []float32{1, 2, 3, nan, nan, nan}, "recorded nothing"},
		{"other logits", []float32{1, 2, 3, 4, 5, 7}, "other logits"},
	} {
		err := checkGraphReplay(eager, s.Float32(c.replayed, 2, 3), 2)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}
