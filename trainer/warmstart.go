package trainer

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/learner"
)

// warmStart is the supervised warm start: scripted demonstrations of the
// synthetic world, or of worlds of their own with fresh worlds (general
// skills, calls or the multi-hop expert, by sft.warm_start), or sft.data, masked
// NLL on the assistant's tokens.
func (t *Trainer) warmStart(ctx context.Context, stop <-chan struct{}) error {
	c := t.cfg.SFT
	var demos [][]tokenizer.Message
	var err error
	switch {
	case c.Data != "":
		demos, err = LoadDemos(c.Data)
	case t.models.fresh && t.data.fresh != nil && c.Demos > 0:
		demos, err = t.freshDemos(ctx, c.Demos)
	case t.models.fresh && t.data.world != nil && c.Demos > 0 && c.WarmStart == "expert":
		demos, err = scriptedDemos(ctx, t.data.world, t.data.train, t.agent.Tools, c.Demos, c.ImperfectFraction, t.rng)
	case t.models.fresh && t.data.world != nil && c.Demos > 0:
		demos, err = generalDemos(ctx, t.data.world, t.data.train, t.agent.Tools, c.Demos, c.WarmStart, t.rng)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	seqs, dropped, err := renderDemos(t.agent.Format, demos, t.agent.Schemas, t.cfg.Env.MaxTokens)
	if err != nil {
		return err
	}
	total := (len(seqs) + c.Batch - 1) / c.Batch * c.Epochs
	if c.WarmupSteps > total { // the config's check knows only scripted demonstrations' count, and not the dropped
		s := "s"
		if total == 1 {
			s = ""
		}
		return fmt.Errorf("sft.warmup_steps %d exceeds the warm start's %d step%s (%d demonstrations in batches of sft.batch %d, sft.epochs %d): "+
			"the learning rate would never reach sft.lr", c.WarmupSteps, total, s, len(seqs), c.Batch, c.Epochs)
	}
	bar := t.bar("warm start (SFT)", total)
	st, err := learner.SFT(t.models.warmStartModel(), t.dist, seqs, learner.SFTConfig{Epochs: c.Epochs, Batch: c.Batch, Micro: t.cfg.Algorithm.MicroBatch,
		LR: c.LR, Schedule: learner.Schedule{Shape: c.Schedule, Warmup: c.WarmupSteps}, MaxGradNorm: t.cfg.Optim.MaxGradNorm, Zero: t.cfg.Dist.Zero,
		Before: func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if stopped, err := t.dist.Any(stopSignal(stop).asked()); err != nil || stopped {
				return cmp.Or(err, ErrStopped)
			}
			return nil
		},
		After: func(step, total int, loss float64) {
			bar.Add(1)
			if every := max(1, total/10); step%every == 0 || step == total {
				t.log.Info().Int("step", step).Int("of", total).Float64("loss", loss).Msg("warm start")
			}
		}}, t.rng)
	bar.Done()
	if errors.Is(err, ErrStopped) {
		t.log.Warn().Int("step", st.Steps).Int("of", total).Msg("warm start stopped")
		return err
	}
	if err != nil {
		return fmt.Errorf("warm start: %w", err)
	}
	if st.Skipped > 0 {
		t.log.Warn().Int("skipped", st.Skipped).Int("steps", st.Steps).Msg("warm start: non-finite loss or gradient, steps skipped")
	}
	t.log.Info().Int("demos", st.Sequences).Int("dropped_too_long", dropped).Int("steps", st.Steps).Int("skipped", st.Skipped).
		Float64("loss_first", st.FirstLoss).Float64("loss_last", st.LastLoss).Msg("warm start done")
	return t.models.warmStarted()
}
