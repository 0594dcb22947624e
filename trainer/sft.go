package trainer

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/traj"
)

// sftConfig shapes a supervised warm start.
type sftConfig struct {
	Epochs, Batch, Micro int
	LR, MaxGradNorm      float64
	MaxTokens            int // longer demonstrations are dropped
}

// sftStats summarise a supervised run.
type sftStats struct {
	FirstLoss, LastLoss float64
	Steps, Sequences    int
	Dropped             int
}

// renderDemos turns conversations into token sequences whose mask is 1 on
// the assistant's tokens only.
func renderDemos(cf *tokenizer.ChatFormat, demos [][]tokenizer.Message, tools []json.RawMessage, maxTokens int) ([]*traj.Trajectory, int, error) {
	var out []*traj.Trajectory
	dropped := 0
	for i, msgs := range demos {
		ids, mask, err := cf.Render(msgs, tools, false)
		if err != nil {
			return nil, 0, fmt.Errorf("demonstration %d: %w", i+1, err)
		}
		if maxTokens > 0 && len(ids) > maxTokens {
			dropped++
			continue
		}
		out = append(out, &traj.Trajectory{ID: fmt.Sprintf("demo-%d", i), Tokens: ids, Mask: mask})
	}
	return out, dropped, nil
}

// supervised trains m by masked negative log-likelihood over the
// assistant's tokens (token-mean over each mini-batch), with AdamW and
// gradient-norm clipping. onStep is called after every optimizer step.
// A value on stop (every rank is asked) ends it before the next step with
// ErrStopped.
//
// In a data-parallel job (g not nil) every rank walks the same batches
// and computes the gradient of its share of each; the summed gradient is
// the whole batch's.
func supervised(ctx context.Context, stop <-chan struct{}, m *torch.Model, g *dist.Group, seqs []*traj.Trajectory, cfg sftConfig, rng *rand.Rand, onStep func(step, total int, loss float64)) (sftStats, error) {
	st := sftStats{Sequences: len(seqs), FirstLoss: math.NaN()}
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
	idx := rng.Perm(len(seqs))
	perEpoch := (len(seqs) + cfg.Batch - 1) / cfg.Batch
	total := perEpoch * cfg.Epochs
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for lo := 0; lo < len(idx); lo += cfg.Batch {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if stopped, err := g.Any(asked(stop)); err != nil || stopped {
				return st, cmp.Or(err, ErrStopped)
			}
			mini := pick(seqs, idx[lo:min(lo+cfg.Batch, len(idx))])
			n := norm(mini, true)
			var loss float64
			mine := dist.Shard(g, mini)
			for _, mb := range microBatches(mine, cfg.Micro) {
				p := padBatch(pick(mine, mb))
				o, err := m.Forward(p.batch, torch.ForwardOptions{Grad: true})
				if err != nil {
					return st, fmt.Errorf("sft forward: %w", err)
				}
				s := torch.NewScope()
				s.Own(o.LogProbs)
				mask := s.Float32(p.grid(func(t *traj.Trajectory, j int) float32 { return float32(t.Mask[j]) }), int64(len(mb)), int64(p.width()))
				l := algo.Aggregate(s, s.Neg(o.LogProbs), mask, "token-mean", n)
				if err := s.Err(); err != nil {
					s.Close()
					return st, err
				}
				loss += item(s, l)
				err = l.Backward()
				s.Close()
				if err != nil {
					return st, err
				}
			}
			if err := g.AllReduceGrads(params); err != nil {
				return st, err
			}
			lv := []float64{loss}
			if err := g.Sum(lv); err != nil {
				return st, err
			}
			loss = lv[0]
			gn, err := opt.ClipGradNormWith(cfg.MaxGradNorm, g.Largest)
			if err != nil {
				return st, err
			}
			if finite(gn) && finite(loss) {
				if err := opt.Step(); err != nil {
					return st, err
				}
			}
			if err := opt.ZeroGrad(); err != nil {
				return st, err
			}
			st.Steps++
			if math.IsNaN(st.FirstLoss) {
				st.FirstLoss = loss
			}
			st.LastLoss = loss
			if onStep != nil {
				onStep(st.Steps, total, loss)
			}
		}
	}
	return st, nil
}
