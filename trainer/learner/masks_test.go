package learner

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/loss"
	"github.com/agentrl/agentrl/trajectory"
)

// item reads a scalar of s, NaN when the scope has failed.
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

// maskTrajectory is the hand-worked two-turn trajectory of trainer/algo's
// golden tests: prompt 0-1, turn-0 action 2-3, tool response 4-5, turn-1
// action 6-7; values .3 .2 .5 .4 .9 .7 .6 .8; turn-0 process reward 0.5,
// outcome 1.
func maskTrajectory() *trajectory.Trajectory {
	return &trajectory.Trajectory{
		ID: "m", Outcome: 1, PromptLen: 2,
		Tokens: []int32{10, 11, 20, 21, 30, 31, 40, 41},
		Mask:   []uint8{0, 0, 1, 1, 0, 0, 1, 1},
		TurnOf: []int16{-1, -1, 0, 0, 0, 0, 1, 1},
		Values: []float32{0.3, 0.2, 0.5, 0.4, 0.9, 0.7, 0.6, 0.8},
		Turns:  []trajectory.Turn{{ProcessReward: 0.5}, {ProcessReward: 0}},
	}
}

// The loss mask switch on the hand-worked trajectory, through the grids and
// losses the update builds. GAE with gamma 0.9, lambda 0.8 and the
// advantage mask on gives (by hand, see trainer/algo/gae_test.go) the
// action tokens A2 = 0.4576576, A3 = 0.83008, A6 = 0.264, A7 = 0.2, and the
// tool tokens 4, 5 carry A6 = 0.264 with returns A + V.
//
// At ratio 1 the PPO loss of a token is -A; with the current values equal
// to the old ones the value loss of a token is (V - R)^2 / 2 = A^2 / 2.
// Token means:
//
//	loss mask on  (2, 3, 6, 7):       policy -(0.4576576+0.83008+0.264+0.2)/4 = -0.4379344
//	                                  value  (0.4576576^2+0.83008^2+0.264^2+0.2^2)/8 = 0.12602241065472
//	loss mask off (2, 3, 4, 5, 6, 7): policy -(1.7517376+2*0.264)/6 = -0.37995626666...
//	                                  value  (0.50408964261888+2*0.264^2)/12 = 0.09563094043648
//
// Were the tool tokens' returns 0 (the old behaviour), the value loss with
// the mask off would pull V4 = 0.9 and V5 = 0.7 towards 0 instead.
func TestLossMaskSwitchOnHandWorkedTrajectory(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	for _, tc := range []struct {
		lossMask      bool
		policy, value float64
	}{
		{true, -0.4379344, 0.12602241065472},
		{false, -(1.7517376 + 2*0.264) / 6, 0.09563094043648},
	} {
		tr := maskTrajectory()
		opt := algo.DefaultOptions()
		opt.Gamma, opt.Lambda, opt.Whiten = 0.9, 0.8, false
		if err := algo.GAE([]*trajectory.Trajectory{tr}, nil, opt); err != nil {
			t.Fatal(err)
		}
		p := PadBatch([]*trajectory.Trajectory{tr})
		s := torch.NewScope()
		W := int64(p.Width())
		grid := func(f func(*trajectory.Trajectory, int) float32) *torch.Tensor { return s.Float32(p.Grid(f), 1, W) }
		mask := grid(func(t *trajectory.Trajectory, j int) float32 { return LossMask(t, j, tc.lossMask) })
		logp := grid(func(*trajectory.Trajectory, int) float32 { return -1 })
		adv := grid(func(t *trajectory.Trajectory, j int) float32 { return t.Advantages[j] })
		vals := grid(func(t *trajectory.Trajectory, j int) float32 { return t.Values[j] })
		ret := grid(func(t *trajectory.Trajectory, j int) float32 { return t.Returns[j] })
		n := Norm([]*trajectory.Trajectory{tr}, tc.lossMask)
		cfg := algo.LossConfig{PolicyLoss: "ppo", ClipLow: 0.2, ClipHigh: 0.2, LossAgg: "token-mean", KLEstimator: "k3"}
		pg, err := loss.PolicyLoss(s, loss.PolicyInputs{LogP: logp, OldLogP: logp, Adv: adv, Mask: mask}, cfg, n)
		if err != nil {
			t.Fatal(err)
		}
		pl := item(s, pg.Loss)
		vl := item(s, loss.ValueLoss(s, vals, vals, ret, mask, 0.2, "token-mean", n))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if math.Abs(pl-tc.policy) > 1e-6 || math.Abs(vl-tc.value) > 1e-6 {
			t.Errorf("loss mask %v: policy loss %.9g, value loss %.9g; want %.9g, %.9g", tc.lossMask, pl, vl, tc.policy, tc.value)
		}
	}
}
