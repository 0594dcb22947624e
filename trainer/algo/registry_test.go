package algo

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

func TestRegistry(t *testing.T) {
	want := []string{"gae", "gigpo", "grpo", "reinforce_pp", "reinforce_pp_baseline", "rloo", "turn_rloo"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		if e, err := Get(n); err != nil || e.Advantages == nil {
			t.Errorf("Get(%q) = %v, %v", n, e, err)
		}
	}
	_, err := Get("ppo")
	if err == nil || !strings.Contains(err.Error(), `"ppo"`) || !strings.Contains(err.Error(), strings.Join(want, ", ")) {
		t.Errorf("Get(ppo) error %v, want the name and the known list", err)
	}
	// The registered grpo is GRPO: same advantages on the same batch.
	e, _ := Get("grpo")
	a, b := groupBatch(), groupBatch()
	if err := e.Advantages(a, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	if err := GRPO(b, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a[0].Advantages, b[0].Advantages) {
		t.Error(`Get("grpo") is not GRPO`)
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("second Register of gae did not panic")
		}
	}()
	Register("gae", Estimator{Advantages: func([]*trajectory.Trajectory, [][]float32, Options) error { return nil }})
}

// What each estimator needs: only GAE a value function; the
// group-relative ones (GRPO, RLOO, REINFORCE++ with the group baseline,
// GiGPO, the turn-level leave-one-out) groups of at least 2.
func TestRegistryNeeds(t *testing.T) {
	for name, want := range map[string][2]bool{
		"gae": {true, false}, "grpo": {false, true}, "rloo": {false, true},
		"reinforce_pp": {false, false}, "reinforce_pp_baseline": {false, true},
		"gigpo": {false, true}, "turn_rloo": {false, true},
	} {
		e, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]bool{e.Critic, e.Groups}; got != want {
			t.Errorf("%s: critic, groups = %v, want %v", name, got, want)
		}
	}
}
