package config

import (
	"slices"
	"testing"
)

// A resume may change what it honours (iterations, learning rate,
// logging) but not what the checkpoint fixes; each such key is named.
func TestResumeConflicts(t *testing.T) {
	saved := Default()
	c := saved
	c.Run.Iterations, c.Optim.LR, c.Logging.Level = 99, 3e-5, "debug"
	if got := c.ResumeConflicts(saved); len(got) != 0 {
		t.Errorf("honourable changes reported as conflicts: %v", got)
	}
	c.Model.Tiny.Hidden = 256
	c.Data.Synthetic.Questions = 10
	c.Run.Seed = 5
	c.Algorithm.Estimator = "gae"
	c.Store.Path = "elsewhere.db"
	c.SFT.Demos = 3
	want := []string{"run.seed", "model.tiny.hidden", "data.synthetic.questions", "algorithm.estimator", "sft.demos", "store.path"}
	got := c.ResumeConflicts(saved)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("conflicts %v, want %v", got, want)
	}
}
