package algo

import (
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// benchBatch is 64 groups of 8 four-turn trajectories of 2048 tokens: a
// 256-token prompt, then per turn 320 action tokens and 128 tool-response
// tokens.
func benchBatch() []*trajectory.Trajectory {
	var batch []*trajectory.Trajectory
	for g := range 64 {
		for s := range 8 {
			t := &trajectory.Trajectory{Group: g, Sample: s, PromptLen: 256, Outcome: float64(s % 2)}
			for i := range 2048 {
				turn, action := -1, uint8(0)
				if i >= 256 {
					turn = (i - 256) / 448
					if (i-256)%448 < 320 {
						action = 1
					}
				}
				t.Tokens = append(t.Tokens, int32(i))
				t.TurnOf = append(t.TurnOf, int16(turn))
				t.Mask = append(t.Mask, action)
				t.Values = append(t.Values, float32(i%7)/7)
			}
			t.Turns = make([]trajectory.Turn, 4)
			batch = append(batch, t)
		}
	}
	return batch
}

func benchmarkEstimator(b *testing.B, e AdvantageFunc) {
	batch := benchBatch()
	b.ReportAllocs()
	for b.Loop() {
		if err := e(batch, nil, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGAE(b *testing.B)         { benchmarkEstimator(b, GAE) }
func BenchmarkGRPO(b *testing.B)        { benchmarkEstimator(b, GRPO) }
func BenchmarkReinforcePP(b *testing.B) { benchmarkEstimator(b, ReinforcePP) }
