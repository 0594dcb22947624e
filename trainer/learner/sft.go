package learner

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/loss"
	"github.com/agentrl/agentrl/trajectory"
)

// SFTConfig shapes a supervised warm start.
type SFTConfig struct {
	Epochs, Batch, Micro int
	LR, MaxGradNorm      float64
	// Schedule gives each step's learning rate from LR (its Total is
	// set to the run's steps); the zero Schedule is constant.
	Schedule Schedule
	Zero     int // the optimizer's ZeRO stage over g's ranks (dist.zero)
	// Before is called before every optimizer step; an error (a stop, a
	// cancelled context) ends the run with it. Nil never stops.
	Before func() error
	// After is called after every optimizer step, taken or skipped, with
	// the mini-batch's loss summed over the ranks.
	After func(step, total int, loss float64)
}

// SFTStats summarise a supervised run. Skipped counts the steps a
// non-finite loss or gradient norm skipped.
type SFTStats struct {
	FirstLoss, LastLoss       float64
	Steps, Skipped, Sequences int
}

// SFT trains m by masked negative log-likelihood over the tokens of seqs
// whose Mask is 1 (the assistant's; token-mean over each mini-batch), with
// AdamW (no weight decay), the learning rate of cfg.Schedule over the run's
// steps and gradient-norm clipping, through the same step as the RL
// update.
//
// In a data-parallel job (g not nil) every rank walks the same batches
// and computes the gradient of its share of each; the summed gradient is
// the whole batch's.
func SFT(m *torch.Model, g *dist.Group, seqs []*trajectory.Trajectory, cfg SFTConfig, rng *rand.Rand) (SFTStats, error) {
	st := SFTStats{Sequences: len(seqs), FirstLoss: math.NaN()}
	if len(seqs) == 0 {
		return st, fmt.Errorf("sft: no demonstrations")
	}
	params, err := m.Params()
	if err != nil {
		return st, err
	}
	defer func() {
		for _, p := range params {
			p.Free()
		}
	}()
	hp := torch.DefaultAdamW
	hp.LR, hp.WeightDecay = cfg.LR, 0
	opt, err := torch.NewAdamW(params, nil, []torch.AdamWGroup{hp})
	if err != nil {
		return st, err
	}
	defer opt.Free()
	if err := g.ShardOptimizer(opt, cfg.Zero); err != nil {
		return st, err
	}
	idx := rng.Perm(len(seqs))
	total := (len(seqs) + cfg.Batch - 1) / cfg.Batch * cfg.Epochs
	sched := cfg.Schedule
	sched.Total = total
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for lo := 0; lo < len(idx); lo += cfg.Batch {
			if cfg.Before != nil {
				if err := cfg.Before(); err != nil {
					return st, err
				}
			}
			if err := opt.SetLR(0, sched.At(cfg.LR, st.Steps)); err != nil {
				return st, err
			}
			if err := sftStep(m, opt, g, cfg, Pick(seqs, idx[lo:min(lo+cfg.Batch, len(idx))]), &st); err != nil {
				return st, err
			}
			if cfg.After != nil {
				cfg.After(st.Steps, total, st.LastLoss)
			}
		}
	}
	return st, nil
}

// sftStep is one optimizer step of the warm start on a mini-batch: this
// rank's shard of it in micro-batches whose gradients accumulate, then
// the step (optimizerStep), as the update's policy step takes it.
func sftStep(m *torch.Model, opt *torch.AdamW, g *dist.Group, cfg SFTConfig, mini []*trajectory.Trajectory, st *SFTStats) error {
	n := Norm(mini, true)
	sum, nonFinite := 0.0, false
	for _, p := range sftMicroBatches(mini, g, cfg.Micro) {
		v, err := sftMicroBatch(m, opt, p, n)
		if err != nil {
			return err
		}
		sum += v
		nonFinite = nonFinite || !finite(v)
	}
	var tm Timing
	taken, _, err := optimizerStep("sft", opt, g, cfg.MaxGradNorm, nonFinite, &tm)
	if err != nil {
		return err
	}
	loss := []float64{sum}
	if err := g.Sum(loss); err != nil {
		return err
	}
	if !taken {
		st.Skipped++
	}
	st.Steps++
	if math.IsNaN(st.FirstLoss) {
		st.FirstLoss = loss[0]
	}
	st.LastLoss = loss[0]
	return nil
}

// sftMicroBatches are this rank's micro-batches of a warm-start
// mini-batch, each run packed (one demonstration a row) with the tokens
// the loss reads, the assistant's, as its targets: the LM head and its
// log-softmax over the vocabulary run on them alone, not on the prompts
// and tool responses around them (most of a demonstration's tokens). The
// loss is the padded forward's.
func sftMicroBatches(mini []*trajectory.Trajectory, g *dist.Group, micro int) []Padded {
	ps := microBatches(NewBatch(mini, false).shard(g), micro, allTargets)
	for i := range ps {
		ps[i].packed = packRows(ps[i], lossTargets(true))
	}
	return ps
}

// sftMicroBatch builds one micro-batch's loss in a scope of its own,
// back-propagates it and returns it.
func sftMicroBatch(m *torch.Model, opt *torch.AdamW, p Padded, n algo.Norm) (float64, error) {
	s := torch.NewScopeOn(m.Device)
	defer s.Close()
	l, err := sftLoss(s, m, p, n)
	if err != nil {
		return 0, err
	}
	if err := backward(s, "sft", p, l, opt); err != nil {
		return 0, err
	}
	v, _, err := readBack(s, []*torch.Tensor{l}, nil)
	if err != nil {
		return 0, fmt.Errorf("sft loss: %w", err)
	}
	return v[0], nil
}

// sftLoss is one micro-batch's masked negative log-likelihood, normalised
// by the whole mini-batch's tokens n.
func sftLoss(s *torch.Scope, m *torch.Model, p Padded, n algo.Norm) (*torch.Tensor, error) {
	o, err := forward(s, m, p, torch.ForwardOptions{Grad: true}, torch.Output{}, false)
	if err != nil {
		return nil, OOMHint(fmt.Errorf("sft forward of %d trajectories (%d tokens): %w", len(p.Trs), p.Tokens(), err))
	}
	maskV := p.Grid(func(t *trajectory.Trajectory, j int) float32 { return LossMask(t, j, true) })
	mask := s.Float32(maskV, int64(len(p.Trs)), int64(p.Width()))
	return loss.Aggregate(s, s.Neg(o.LogProbs), mask, "token-mean", n), nil
}
