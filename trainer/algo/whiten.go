package algo

import (
	"math"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trajectory"
)

// whitenEps is the variance floor of verl's masked_whiten.
const whitenEps = 1e-8

// whiten standardises the advantages at the given token indices across the
// whole batch, verl's verl_F.masked_whiten (utils/torch_functional.py):
//
//	A_t <- (A_t - mean) / sqrt(var + 1e-8)
//
// with the mean and the Bessel-corrected (n-1) variance taken over every
// selected token of every trajectory. With fewer than two tokens the
// variance is taken as 0. idx[k] holds the token indices of batch[k]. The
// same transform applies to every other token after the prompt that holds
// an advantage carried from a step (carryAcross), as masked_whiten whitens
// the whole tensor with the masked statistics.
func whiten(batch []*trajectory.Trajectory, idx [][]int) {
	var vals []float64
	for k, t := range batch {
		for _, i := range idx[k] {
			vals = append(vals, float64(t.Advantages[i]))
		}
	}
	if len(vals) == 0 {
		return
	}
	mean, variance := stat.MeanVar(vals, 1)
	scale := 1 / math.Sqrt(variance+whitenEps)
	for k, t := range batch {
		for _, i := range append(carried(t, idx[k]), idx[k]...) {
			t.Advantages[i] = float32((float64(t.Advantages[i]) - mean) * scale)
		}
	}
}
