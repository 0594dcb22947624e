package learner

import (
	"fmt"
	"math"
	"time"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trajectory"
)

// lossFunc builds one micro-batch's loss in s, its forward pass included,
// and adds the scalars it reports (diagnostics) to r. The reports reach
// their sinks whether or not the step is taken.
type lossFunc func(s *torch.Scope, p Padded, r *readback) (*torch.Tensor, error)

// readback collects the scalar tensors a micro-batch's loss reports, the
// grids it keeps (the training forward's logprobs when they stand in for
// the old ones), and where each value goes. They are read back together
// with the loss, in one copy after the backward pass: on a GPU that is one
// synchronisation per micro-batch, not one per figure or grid.
type readback struct {
	ts       []*torch.Tensor
	sinks    []func(float64)
	rows     []*torch.Tensor
	rowSinks []func([]float32)
}

// add reports the scalar x; sink receives its value.
func (r *readback) add(x *torch.Tensor, sink func(float64)) {
	r.ts = append(r.ts, x)
	r.sinks = append(r.sinks, sink)
}

// addRows reports the grid x; sink receives its values, row-major.
func (r *readback) addRows(x *torch.Tensor, sink func([]float32)) {
	r.rows = append(r.rows, x)
	r.rowSinks = append(r.rowSinks, sink)
}

// read copies the loss, the reported scalars and the reported grids back
// in one transfer, hands each report to its sink and returns the loss.
func (r *readback) read(s *torch.Scope, loss *torch.Tensor) (float64, error) {
	parts := make([]*torch.Tensor, 0, 1+len(r.ts)+len(r.rows))
	for _, t := range append(append([]*torch.Tensor{loss}, r.ts...), r.rows...) {
		parts = append(parts, s.To(s.Detach(s.Reshape(t, -1)), s.Device(), torch.Float32))
	}
	flat := s.Cat(0, parts...)
	if err := s.Err(); err != nil {
		return 0, err
	}
	vals, err := flat.Float32s()
	if err != nil {
		return 0, err
	}
	for i, sink := range r.sinks {
		sink(float64(vals[i+1]))
	}
	at := 1 + len(r.ts)
	for i, sink := range r.rowSinks {
		n := int(parts[1+len(r.ts)+i].Numel())
		sink(vals[at : at+n])
		at += n
	}
	return float64(vals[0]), nil
}

// stepper takes optimizer steps of one optimizer over a model on dev.
// Name ("policy", "critic", "sft") names its errors.
type stepper struct {
	name        string
	dev         torch.Device
	opt         *torch.AdamW
	dist        *dist.Group
	micro       int
	maxGradNorm float64
	// want packs the segments of an episode with these targets
	// (batches); nil runs each trajectory as a sample of its own.
	want targets
}

// stepResult is what one optimizer step did.
type stepResult struct {
	Taken    bool    // false: a non-finite loss or gradient norm on some rank skipped it
	GradNorm float64 // the norm before clipping, the same on every rank
	Loss     float64 // this rank's sum of its micro-batch losses
	Timing   Timing  // this rank's forward, backward and optimizer time
	// Tokens are the tokens this rank's forwards ran through the model (a
	// packed episode's shared prefixes once), Samples the same
	// trajectories' tokens as samples of their own; padding left out.
	Tokens, Samples int
}

// step is one optimizer step on a mini-batch: this rank's shard of mini
// (whole episodes when packing: shardEpisodes) is split into micro-batches
// (batches) whose gradients accumulate, the gradients are
// summed over the ranks, the ranks agree whether any saw a non-finite
// loss, the gradient norm is clipped, and the step is taken, or the
// gradients dropped when a loss or the norm is not finite.
func (k stepper) step(mini []*trajectory.Trajectory, loss lossFunc) (stepResult, error) {
	var r stepResult
	nonFinite := false
	shard := dist.Shard[*trajectory.Trajectory]
	if k.want != nil {
		shard = shardEpisodes
	}
	mine := shard(k.dist, mini)
	for _, p := range batches(mine, k.micro, k.want) {
		v, err := k.microStep(p, loss, &r.Timing)
		if err != nil {
			return r, err
		}
		r.Tokens += p.Tokens()
		r.Samples += tokens(p.Trs)
		r.Loss += v
		nonFinite = nonFinite || !finite(v)
	}
	start := time.Now()
	err := k.apply(&r, nonFinite)
	r.Timing.Optim = time.Since(start)
	return r, err
}

// apply sums the gradients over the ranks (whole, or with ZeRO stage 2
// each rank its range: the optimizer holds the group), clips their norm
// and takes the step into r, or drops the gradients when a loss
// (nonFinite, on any rank) or the norm is not finite.
func (k stepper) apply(r *stepResult, nonFinite bool) error {
	if err := k.opt.ReduceGrads(); err != nil {
		return fmt.Errorf("%s gradient reduction over the ranks: %w", k.name, err)
	}
	var err error
	if nonFinite, err = k.dist.Any(nonFinite); err != nil {
		return err
	}
	if r.GradNorm, err = k.opt.ClipGradNorm(k.maxGradNorm); err != nil {
		return err
	}
	if nonFinite || !finite(r.GradNorm) {
		return k.opt.ZeroGrad()
	}
	r.Taken = true
	if err := k.opt.Step(); err != nil {
		return err
	}
	return k.opt.ZeroGrad()
}

// microStep builds one micro-batch's loss in a scope on the model's
// device and back-propagates it, accumulating gradients (into the
// optimizer's f32 accumulators for bf16/f16 parameters). A non-finite loss
// is back-propagated all the same, so that the step never waits on the
// device for the loss's value; the ranks then agree to drop the step's
// gradients. It returns the loss, and adds its forward and backward time
// to tm.
func (k stepper) microStep(p Padded, loss lossFunc, tm *Timing) (float64, error) {
	s := torch.NewScopeOn(k.dev)
	defer s.Close()
	var r readback
	start := time.Now()
	l, err := loss(s, p, &r)
	if err != nil {
		return 0, err
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("%s loss: %w", k.name, err)
	}
	forwarded := time.Now()
	if err := l.Backward(); err != nil {
		return 0, OOMHint(fmt.Errorf("%s backward of %d trajectories (%d tokens): %w", k.name, len(p.Trs), p.Tokens(), err))
	}
	if err := k.opt.Accumulate(); err != nil {
		return 0, err
	}
	v, err := r.read(s, l)
	if err != nil {
		return 0, fmt.Errorf("%s loss: %w", k.name, err)
	}
	tm.Forward += forwarded.Sub(start)
	tm.Backward += time.Since(forwarded)
	return v, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
