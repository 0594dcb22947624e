package algo

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trainer/traj"
)

func TestRegistry(t *testing.T) {
	want := []string{"gae", "grpo", "reinforce_pp", "reinforce_pp_baseline", "rloo"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		if e, err := Get(n); err != nil || e == nil {
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
	if err := e(a, nil, DefaultOptions()); err != nil {
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
	Register("gae", func([]*traj.Trajectory, [][]float32, Options) error { return nil })
}
