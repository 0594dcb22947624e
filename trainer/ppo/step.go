package ppo

import (
	"fmt"
	"math"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/traj"
)

// lossFunc builds one micro-batch's loss in s, its forward pass included.
// Its side effects (diagnostics) happen whether or not the step is taken.
type lossFunc func(s *torch.Scope, p Padded) (*torch.Tensor, error)

// stepper takes optimizer steps of one optimizer. Name ("policy",
// "critic", "sft") names its errors.
type stepper struct {
	name        string
	opt         *torch.AdamW
	dist        *dist.Group
	micro       int
	maxGradNorm float64
}

// stepResult is what one optimizer step did.
type stepResult struct {
	Taken    bool    // false: a non-finite loss or gradient norm on some rank skipped it
	GradNorm float64 // the norm before clipping, the same on every rank
	Loss     float64 // this rank's sum of its micro-batch losses
}

// step is one optimizer step on a mini-batch: this rank's shard of mini is
// split into micro-batches whose gradients accumulate, the gradients are
// summed over the ranks, the ranks agree whether any saw a non-finite
// loss, the gradient norm is clipped, and the step is taken, or the
// gradients dropped when a loss or the norm is not finite.
func (k stepper) step(mini []*traj.Trajectory, loss lossFunc) (stepResult, error) {
	var r stepResult
	nonFinite := false
	mine := dist.Shard(k.dist, mini)
	for _, mb := range MicroBatches(mine, k.micro) {
		v, err := k.microStep(PadBatch(Pick(mine, mb)), loss)
		if err != nil {
			return r, err
		}
		r.Loss += v
		nonFinite = nonFinite || !finite(v)
	}
	if err := k.dist.AllReduceGrads(k.opt.Params()); err != nil {
		return r, err
	}
	nonFinite, err := k.dist.Any(nonFinite)
	if err != nil {
		return r, err
	}
	if r.GradNorm, err = k.opt.ClipGradNormWith(k.maxGradNorm, k.dist.Largest); err != nil {
		return r, err
	}
	if nonFinite || !finite(r.GradNorm) {
		return r, k.opt.ZeroGrad()
	}
	r.Taken = true
	if err := k.opt.Step(); err != nil {
		return r, err
	}
	return r, k.opt.ZeroGrad()
}

// microStep builds one micro-batch's loss and, when it is finite,
// back-propagates it (accumulating gradients). It returns the loss.
func (k stepper) microStep(p Padded, loss lossFunc) (float64, error) {
	s := torch.NewScope()
	defer s.Close()
	l, err := loss(s, p)
	if err != nil {
		return 0, err
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("%s loss: %w", k.name, err)
	}
	v, err := l.Item()
	if err != nil {
		return 0, err
	}
	if !finite(v) {
		return v, nil
	}
	if err := l.Backward(); err != nil {
		return 0, OOMHint(fmt.Errorf("%s backward of %d trajectories (%d tokens): %w", k.name, len(p.Trs), p.Batch.T, err))
	}
	return v, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// item reads a scalar, NaN when the scope has failed.
func item(s *torch.Scope, x *torch.Tensor) float64 {
	if s.Err() != nil || x == nil {
		return math.NaN()
	}
	v, err := x.Item()
	if err != nil {
		return math.NaN()
	}
	return v
}
