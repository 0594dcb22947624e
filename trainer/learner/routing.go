package learner

import (
	"fmt"

	"github.com/agentrl/agentrl/torch"
)

// replayed is the routing a forward of m over p replays: each
// trajectory's recorded experts (Trajectory.Routing) on its tokens, and
// on the padding after them the first k experts (distinct, as a replay
// needs, and never read: no loss reads a padded position and padding
// attends to nothing real).
func replayed(m *torch.Model, p Padded) (*torch.Routing, error) {
	c := m.Config
	L, k := c.SparseLayers(), c.MoE.ExpertsPerToken
	if L == 0 {
		return nil, fmt.Errorf("routing replay (algorithm.routing_replay): the model (%s) has no mixture-of-experts layer", c.ModelType)
	}
	T, per := p.Batch.T, L*k
	r := &torch.Routing{Layers: L, K: k, Experts: make([]int16, len(p.Trs)*T*per)}
	for i, t := range p.Trs {
		rec, err := torch.ParseRouting(t.Routing, c.MoE.Experts, L, k)
		if err != nil {
			return nil, fmt.Errorf("routing replay: trajectory %s: %w", t.ID, err)
		}
		if n := len(rec.Experts) / per; n != len(t.Tokens) {
			return nil, fmt.Errorf("routing replay: trajectory %s has the routing of %d tokens for its %d tokens (recorded by a rollout with algorithm.routing_replay on?)", t.ID, n, len(t.Tokens))
		}
		row := r.Experts[i*T*per : (i+1)*T*per]
		copy(row, rec.Experts)
		for j := len(rec.Experts); j < len(row); j++ {
			row[j] = int16(j % k)
		}
	}
	return r, nil
}
