// Package warmstart is a run's supervised warm start: the demonstrations
// (scripted ones of the synthetic world, in worlds of their own with fresh
// worlds, or a file of them: sft.data), rendered as the policy samples its
// turns, and masked NLL on the assistant's tokens (learner.SFT).
package warmstart

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/datasets"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/learner"
)

// ErrStopped is returned by Run when a stop was asked during the warm
// start: there is no checkpoint yet, so the run starts over when run again.
var ErrStopped = errors.New("stopped during the warm start, before the first checkpoint: run it again to start over")

// Bar is the warm start's progress bar, advanced once per step.
type Bar interface {
	Add(n int)
	Done()
}

// Inputs are what a warm start trains, on what, and how it reports.
type Inputs struct {
	Config config.Config
	Model  *torch.Model // the model trained (the policy, or LoRA's base)
	Fresh  bool         // Model was created here: scripted demonstrations make sense
	Data   *datasets.Sets
	Agent  *agent.Agent
	Dist   *dist.Group // nil: a single process
	Rand   *rand.Rand
	Log    zerolog.Logger
	Bar    func(total int) Bar // starts the progress bar of total steps
	Stop   <-chan struct{}     // asked (a value or closed): stop before the next step
}

// Run is the supervised warm start: scripted demonstrations of the
// synthetic world, or of worlds of their own with fresh worlds (general
// skills, calls or the multi-hop expert, by sft.warm_start), or sft.data,
// masked NLL on the assistant's tokens. It reports whether it trained
// (false: no demonstrations for this run).
func Run(ctx context.Context, in Inputs) (bool, error) {
	c := in.Config.SFT
	var demos [][]tokenizer.Message
	var err error
	d := in.Data
	switch {
	case c.Data != "":
		demos, err = LoadDemos(c.Data)
	case in.Fresh && d.Fresh != nil && c.Demos > 0:
		demos, err = freshDemos(ctx, in, c.Demos)
	case in.Fresh && d.World != nil && c.Demos > 0 && c.WarmStart == "expert":
		demos, err = scriptedDemos(ctx, d.World, d.Train, in.Agent.Tools, c.Demos, c.ImperfectFraction, in.Rand)
	case in.Fresh && d.World != nil && c.Demos > 0:
		demos, err = generalDemos(ctx, d.World, d.Train, in.Agent.Tools, c.Demos, c.WarmStart, in.Rand)
	default:
		return false, nil
	}
	if err != nil {
		return false, err
	}
	seqs, dropped, err := renderDemos(in.Agent.Format, demos, in.Agent.Schemas, in.Config.Env.MaxTokens)
	if err != nil {
		return false, err
	}
	total := (len(seqs) + c.Batch - 1) / c.Batch * c.Epochs
	if c.WarmupSteps > total { // the config's check knows only scripted demonstrations' count, and not the dropped
		s := "s"
		if total == 1 {
			s = ""
		}
		return false, fmt.Errorf("sft.warmup_steps %d exceeds the warm start's %d step%s (%d demonstrations in batches of sft.batch %d, sft.epochs %d): "+
			"the learning rate would never reach sft.lr", c.WarmupSteps, total, s, len(seqs), c.Batch, c.Epochs)
	}
	bar := in.Bar(total)
	st, err := learner.SFT(in.Model, in.Dist, seqs, learner.SFTConfig{Epochs: c.Epochs, Batch: c.Batch, Micro: in.Config.Algorithm.MicroBatch,
		LR: c.LR, Schedule: learner.Schedule{Shape: c.Schedule, Warmup: c.WarmupSteps}, MaxGradNorm: in.Config.Optim.MaxGradNorm, Zero: in.Config.Dist.Zero,
		Before: func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			asked := false
			select {
			case <-in.Stop:
				asked = true
			default:
			}
			if stopped, err := in.Dist.Any(asked); err != nil || stopped {
				return cmp.Or(err, ErrStopped)
			}
			return nil
		},
		After: func(step, total int, loss float64) {
			bar.Add(1)
			if every := max(1, total/10); step%every == 0 || step == total {
				in.Log.Info().Int("step", step).Int("of", total).Float64("loss", loss).Msg("warm start")
			}
		}}, in.Rand)
	bar.Done()
	if errors.Is(err, ErrStopped) {
		in.Log.Warn().Int("step", st.Steps).Int("of", total).Msg("warm start stopped")
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("warm start: %w", err)
	}
	if st.Skipped > 0 {
		in.Log.Warn().Int("skipped", st.Skipped).Int("steps", st.Steps).Msg("warm start: non-finite loss or gradient, steps skipped")
	}
	in.Log.Info().Int("demos", st.Sequences).Int("dropped_too_long", dropped).Int("steps", st.Steps).Int("skipped", st.Skipped).
		Float64("loss_first", st.FirstLoss).Float64("loss_last", st.LastLoss).Msg("warm start done")
	return true, nil
}
