package trainer

import (
	"encoding/json"
)

// checkpoint saves the run after iteration t.state.Iteration: the models
// and their optimizers' state, and the run state (the data position, the
// optimizer steps, the generator's state) as state.json, into the folder
// models.Set.Checkpoint writes. Every rank takes part; rank 0 writes.
func (t *Trainer) checkpoint() error {
	if err := t.models.AgreeOnWeights(); err != nil {
		return err
	}
	// With ZeRO every rank holds a range of the optimizer state: all take
	// part in gathering it whole.
	opt, err := t.models.learner.GatherOptimizers()
	if err != nil {
		return err
	}
	if !t.dist.Leader() {
		return nil // rank 0 writes it; every rank holds the same weights
	}
	// The store must hold every iteration the checkpoint covers: a resume
	// redoes only what comes after it.
	if err := t.rec.Flush(); err != nil {
		return err
	}
	if t.state.RNG, err = t.pcg.MarshalBinary(); err != nil {
		return err
	}
	state, err := json.MarshalIndent(t.state, "", "  ")
	if err != nil {
		return err
	}
	return t.models.Checkpoint(t.state.Iteration, opt, state)
}
