package store

import (
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// A resumed run drops the iterations after its checkpoint, with all their
// rows, and can write them again.
func TestDropAfter(t *testing.T) {
	s, err := Open(t.TempDir() + "/store.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.BeginRun(RunInfo{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	mk := func(iter int) []*trajectory.Trajectory {
		return []*trajectory.Trajectory{{ID: string(rune('a'+iter)) + "-x", Iteration: iter, Split: trajectory.Train,
			Tokens: []int32{1, 2}, Logprobs: []float32{0, -1}, Mask: []uint8{0, 1}, TurnOf: []int16{-1, 0},
			Turns: []trajectory.Turn{{Text: "t"}}}}
	}
	for i := 1; i <= 3; i++ {
		if err := s.WriteIteration(i, map[string]float64{"x": 1}, mk(i)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.DropAfter(1)
	if err != nil || n != 2 {
		t.Fatalf("dropped %d, %v; want 2", n, err)
	}
	if last, _, _ := s.LastIteration(); last != 1 {
		t.Fatalf("last iteration %d after drop", last)
	}
	for _, table := range []string{"trajectories", "turns", "trajectory_tokens"} {
		var c int
		s.db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&c)
		if c != 1 {
			t.Fatalf("%s holds %d rows after the drop, want 1", table, c)
		}
	}
	if err := s.WriteIteration(2, nil, mk(2)); err != nil {
		t.Fatalf("rewriting iteration 2: %v", err)
	}
}
