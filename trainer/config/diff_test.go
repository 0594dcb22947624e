package config

import (
	"encoding/json"
	"slices"
	"testing"
)

// Diff names exactly the keys changed, in declaration order, and a config
// read back from the JSON a run stores (the experiment compares against
// it on resume) differs from the config it was written from in no key.
func TestDiff(t *testing.T) {
	a := Default()
	b := a
	b.Optim.LR = a.Optim.LR * 2
	b.Run.Iterations = a.Run.Iterations + 1
	b.Data.Synthetic.Seed = a.Data.Synthetic.Seed + 1
	if got, want := b.Diff(a), []string{"run.iterations", "data.synthetic.seed", "optim.lr"}; !slices.Equal(got, want) {
		t.Errorf("Diff %v, want %v", got, want)
	}
	if d := a.Diff(a); d != nil {
		t.Errorf("a config differs from itself in %v", d)
	}
	if err := b.Set("tools.enabled=[search]"); err != nil {
		t.Fatal(err)
	}
	cj, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(cj, &back); err != nil {
		t.Fatal(err)
	}
	if d := b.Diff(back); d != nil {
		t.Errorf("the config read back from its JSON differs in %v", d)
	}
}
