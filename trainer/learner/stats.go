package learner

import (
	"time"

	"github.com/agentrl/agentrl/trainer/metric"
)

// Stats are what an update's steps measured (metric.Losses: sums while
// accumulating, then means), the trajectories of the steps it skipped and
// where this rank's time went.
type Stats struct {
	metric.Losses
	SkippedIDs []string
	Timing     Timing
}

// Timing is where an update's wall time went, by phase. On a GPU, work
// still queued when a phase ends is counted in the phase that waits for
// it.
type Timing struct {
	Prepare    time.Duration // old (unless from the step) and reference logprobs and values, without gradients
	Advantages time.Duration // the KL to the reference and the estimator (and the mismatch, after the step, when it gave the old logprobs)
	Forward    time.Duration // the micro-batches' training forwards and losses
	Backward   time.Duration // their backward passes and the read-back of their scalars
	Optim      time.Duration // all-reduce, gradient clipping and the optimizer steps
}

// finish turns the sums into means, after adding up the ranks' sums.
func (l *Learner) finish(st *Stats) error {
	if l.dist.World() > 1 {
		v := st.Sums()
		if err := l.dist.Sum(v); err != nil {
			return err
		}
		st.SetSums(v)
	}
	st.Mean(l.mode == SharedCritic)
	return nil
}
