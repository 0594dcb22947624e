package stat

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// PairedBootstrap is the 95% percentile interval of the mean of d[s][q],
// a paired difference per seed s and question q (for instance one row's
// correctness minus another's on the same question of the same seed),
// resampling seeds and questions: each of the resamples draws S seeds
// and Q questions with replacement, the same questions for every drawn
// seed, and takes the mean of d over the drawn cells. The generator is
// seeded, so the interval is reproducible.
func PairedBootstrap(d [][]float64, resamples int, seed uint64) (Interval, error) {
	if err := checkGrid(d); err != nil {
		return Interval{}, err
	}
	if resamples < 40 {
		return Interval{}, fmt.Errorf("stat: %d bootstrap resamples, want at least 40 for a 95%% interval", resamples)
	}
	S, Q := len(d), len(d[0])
	rng := rand.New(rand.NewPCG(seed, 0xb007))
	count := make([]float64, Q)
	means := make([]float64, resamples)
	for b := range means {
		clear(count)
		for range Q {
			count[rng.IntN(Q)]++
		}
		sum := 0.0
		for range S {
			row := d[rng.IntN(S)]
			for q, c := range count {
				if c != 0 {
					sum += c * row[q]
				}
			}
		}
		means[b] = sum / float64(S*Q)
	}
	sort.Float64s(means)
	total := 0.0
	for _, row := range d {
		for _, v := range row {
			total += v
		}
	}
	lo := means[int(0.025*float64(resamples))]
	hi := means[int(0.975*float64(resamples)+0.5)-1]
	return Interval{Mean: total / float64(S*Q), Lo: lo, Hi: hi}, nil
}
