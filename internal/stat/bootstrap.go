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
	if err := checkResamples(resamples); err != nil {
		return Interval{}, err
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
	lo, hi := percentiles95(means)
	return Interval{Mean: total / float64(S*Q), Lo: lo, Hi: hi}, nil
}

// NestedBootstrap is the 95% percentile interval of the mean of the seed
// means of d[s][q], a paired difference per seed s and question q where
// each seed has its own questions (one world per seed): each resample
// draws S seeds with replacement and, for each drawn seed, Q_s of its
// questions with replacement, and takes the mean of the drawn seeds'
// means. A two-stage bootstrap: like NestedSE, it counts the question
// sampling at both stages, so it errs on the wide side. The generator is
// seeded, so the interval is reproducible.
func NestedBootstrap(d [][]float64, resamples int, seed uint64) (Interval, error) {
	if err := checkNested(d); err != nil {
		return Interval{}, err
	}
	if err := checkResamples(resamples); err != nil {
		return Interval{}, err
	}
	S := len(d)
	rng := rand.New(rand.NewPCG(seed, 0xb007))
	means := make([]float64, resamples)
	for b := range means {
		sum := 0.0
		for range S {
			row := d[rng.IntN(S)]
			m := 0.0
			for range row {
				m += row[rng.IntN(len(row))]
			}
			sum += m / float64(len(row))
		}
		means[b] = sum / float64(S)
	}
	sort.Float64s(means)
	total := 0.0
	for _, row := range d {
		m, _ := MeanVar(row, 0)
		total += m
	}
	lo, hi := percentiles95(means)
	return Interval{Mean: total / float64(S), Lo: lo, Hi: hi}, nil
}

// checkResamples refuses fewer resamples than a 95% percentile interval
// needs.
func checkResamples(resamples int) error {
	if resamples < 40 {
		return fmt.Errorf("stat: %d bootstrap resamples, want at least 40 for a 95%% interval", resamples)
	}
	return nil
}

// percentiles95 are the 2.5th and 97.5th percentiles of sorted resample
// means.
func percentiles95(sorted []float64) (lo, hi float64) {
	n := float64(len(sorted))
	return sorted[int(0.025*n)], sorted[int(0.975*n+0.5)-1]
}
