package trainer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/dist"
)

// runState is what a checkpoint needs besides the weights to continue a run
// exactly: the next iteration, the data cursor and the optimizer step.
type runState struct {
	Iteration int `json:"iteration"` // last finished iteration (0 = none)
	dataPos
	OptSteps int    `json:"opt_steps"` // policy optimizer steps taken
	RNG      []byte `json:"rng"`       // PCG state
	WarmedUp bool   `json:"warmed_up"` // the supervised warm start is done
}

// read reads the run state of the checkpoint ck (its state.json) into s,
// and the generator's state into pcg.
func (s *runState) read(ck string, pcg *rand.PCG) error {
	b, err := os.ReadFile(filepath.Join(ck, "state.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, s); err != nil {
		return fmt.Errorf("%s/state.json: %w", ck, err)
	}
	if err := pcg.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("%s/state.json: rng: %w", ck, err)
	}
	return nil
}

// agree checks, before each iteration of a data-parallel job, that every
// rank of g is at the same iteration, data cursor and optimizer step
// (they draw the same tasks and shuffles from identical state; a
// difference would mean they train on different data).
func (s runState) agree(g *dist.Group) error {
	return g.Agree("the run state", []string{"iteration", "data cursor", "data pass", "optimizer steps"},
		[]float64{float64(s.Iteration), float64(s.Cursor), float64(s.Pass), float64(s.OptSteps)})
}

// dataPos is where the run is in its training tasks: the prompts before
// Cursor in Order are consumed.
type dataPos struct {
	Cursor int   `json:"cursor"` // position in Order
	Order  []int `json:"order"`  // shuffled training-task order of this pass
	Pass   int   `json:"pass"`   // passes over the training tasks so far
}

// clone is a copy of p that shares nothing with it.
func (p dataPos) clone() dataPos {
	p.Order = append([]int(nil), p.Order...)
	return p
}

// next takes the next n of the training tasks train from pos, in a
// shuffled order that perm redraws after every pass (it is given the new
// pass's number).
func (pos *dataPos) next(train []envs.Task, perm func(pass, n int) []int, n int) []envs.Task {
	out := make([]envs.Task, 0, n)
	for len(out) < n {
		if pos.Cursor >= len(pos.Order) || len(pos.Order) != len(train) {
			pos.Order = perm(pos.Pass+1, len(train))
			pos.Cursor = 0
			pos.Pass++
		}
		out = append(out, train[pos.Order[pos.Cursor]])
		pos.Cursor++
	}
	return out
}
