package algo

import (
	"fmt"
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
// the whole tensor with the masked statistics. An advantage, mean or
// variance that overflowed is an error: an infinite variance would scale
// every advantage to 0.
func whiten(batch []*trajectory.Trajectory, idx [][]int) error {
	var vals []float64
	for k, t := range batch {
		for _, i := range idx[k] {
			if a := float64(t.Advantages[i]); !finite(a) {
				return fmt.Errorf("trajectory %q, token %d: advantage %v before whitening (the rewards overflow float32): lower the rewards' scale", t.ID, i, a)
			}
			vals = append(vals, float64(t.Advantages[i]))
		}
	}
	if len(vals) == 0 {
		return nil
	}
	mean, variance := stat.MeanVar(vals, 1)
	if !finite(mean) || !finite(variance) {
		return fmt.Errorf("the batch's advantages overflow their mean (%v) or variance (%v) in whitening: lower the rewards' scale", mean, variance)
	}
	scale := 1 / math.Sqrt(variance+whitenEps)
	for k, t := range batch {
		for _, i := range append(carried(t, idx[k]), idx[k]...) {
			t.Advantages[i] = float32((float64(t.Advantages[i]) - mean) * scale)
		}
	}
	return nil
}
