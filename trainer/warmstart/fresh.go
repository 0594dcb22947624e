package warmstart

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/tokenizer"
)

// freshDemos renders the warm start's n demonstrations in worlds of their
// own: rollout.batch_size per world (worlds demo-1, demo-2, ...), each
// world's questions demonstrated as sft.warm_start says (generalDemos,
// or scriptedDemos for expert).
func freshDemos(ctx context.Context, in Inputs, n int) ([][]tokenizer.Message, error) {
	c, f := in.Config.SFT, in.Data.Fresh
	var out [][]tokenizer.Message
	for k := uint64(1); len(out) < n; k++ {
		w, id, done, err := f.Open(ctx, in.Agent, synth.RoleDemo, k)
		if err != nil {
			return nil, err
		}
		tools, err := in.Agent.ToolsFor(w.Train[0])
		var demos [][]tokenizer.Message
		m := min(f.Questions(), n-len(out))
		if err == nil && c.WarmStart == "expert" {
			demos, err = scriptedDemos(ctx, w, w.Train, tools, m, c.ImperfectFraction, in.Rand)
		} else if err == nil {
			demos, err = generalDemos(ctx, w, w.Train, tools, m, c.WarmStart, in.Rand)
		}
		if derr := done(); err == nil {
			err = derr
		}
		if err != nil {
			return nil, fmt.Errorf("demonstrations in world %s: %w", id, err)
		}
		out = append(out, demos...)
	}
	return out, nil
}
