package stat

import (
	"fmt"
	"math"
)

// Z95 is the standard normal's 0.975 quantile: mean ± Z95·SE is a 95%
// interval.
const Z95 = 1.959963984540054

// Interval is an estimate with a 95% interval around it.
type Interval struct {
	Mean, Lo, Hi float64
}

// String renders the interval as "mean [lo, hi]" (three decimals).
func (iv Interval) String() string {
	return fmt.Sprintf("%.3f [%.3f, %.3f]", iv.Mean, iv.Lo, iv.Hi)
}

// Verdict is a claim's standing at this interval's power: "holds" when
// the interval lies above 0, "fails" when it lies below, else "undecided".
func (iv Interval) Verdict() string {
	switch {
	case iv.Lo > 0:
		return "holds"
	case iv.Hi < 0:
		return "fails"
	}
	return "undecided"
}

// checkGrid reports whether y is a non-empty seeds × questions matrix
// whose rows all have the same, non-zero length.
func checkGrid(y [][]float64) error {
	if len(y) == 0 || len(y[0]) == 0 {
		return fmt.Errorf("stat: no seeds or no questions")
	}
	for s, row := range y {
		if len(row) != len(y[0]) {
			return fmt.Errorf("stat: seed %d has %d questions, seed 0 has %d", s, len(row), len(y[0]))
		}
	}
	return nil
}

// CrossedSE is the mean of y[s][q] (seed s, question q: the same
// questions for every seed) and its standard error when both the seeds
// and the questions are samples: with m_s the mean of seed s and x_q the
// mean of question q over the seeds,
//
//	SE² = var(m_s)/S + var(x_q)/Q   (sample variances, ddof 1)
//
// The seed term is 0 for one seed. The seed-by-question residual is in
// both terms, so SE errs on the wide side by var_res/(S·Q).
func CrossedSE(y [][]float64) (mean, se float64, err error) {
	if err := checkGrid(y); err != nil {
		return 0, 0, err
	}
	S, Q := len(y), len(y[0])
	seedMeans, questionMeans := make([]float64, S), make([]float64, Q)
	for s, row := range y {
		for q, v := range row {
			seedMeans[s] += v / float64(Q)
			questionMeans[q] += v / float64(S)
		}
	}
	mean, vs := MeanVar(seedMeans, 1)
	_, vq := MeanVar(questionMeans, 1)
	return mean, math.Sqrt(vs/float64(S) + vq/float64(Q)), nil
}

// CrossedInterval is CrossedSE's normal 95% interval: mean ± Z95·SE.
func CrossedInterval(y [][]float64) (Interval, error) {
	return normal95(CrossedSE(y))
}

// checkNested reports whether y has at least one seed and every seed at
// least one question (seeds may have different numbers of questions).
func checkNested(y [][]float64) error {
	if len(y) == 0 {
		return fmt.Errorf("stat: no seeds")
	}
	for s, row := range y {
		if len(row) == 0 {
			return fmt.Errorf("stat: seed %d has no questions", s)
		}
	}
	return nil
}

// NestedSE is the mean of the seed means of y[s][q], where each seed s
// has its own questions (questions nested in seeds: one world per seed),
// and its standard error when both the seeds and each seed's questions
// are samples: with m_s the mean and v_s the sample variance (ddof 1) of
// seed s's Q_s outcomes,
//
//	SE² = var(m_s)/S + Σ_s v_s/Q_s / S²
//
// The seed term (0 for one seed) already holds the question sampling of
// each seed mean, so the second term counts it again and SE errs on the
// wide side by that term; with one seed SE is the question term alone,
// as CrossedSE's.
func NestedSE(y [][]float64) (mean, se float64, err error) {
	if err := checkNested(y); err != nil {
		return 0, 0, err
	}
	S := float64(len(y))
	seedMeans := make([]float64, len(y))
	within := 0.0
	for s, row := range y {
		m, v := MeanVar(row, 1)
		seedMeans[s] = m
		within += v / float64(len(row))
	}
	mean, vs := MeanVar(seedMeans, 1)
	return mean, math.Sqrt(vs/S + within/(S*S)), nil
}

// NestedInterval is NestedSE's normal 95% interval: mean ± Z95·SE.
func NestedInterval(y [][]float64) (Interval, error) {
	return normal95(NestedSE(y))
}

// normal95 is the normal 95% interval mean ± Z95·se, or err.
func normal95(mean, se float64, err error) (Interval, error) {
	if err != nil {
		return Interval{}, err
	}
	return Interval{Mean: mean, Lo: mean - Z95*se, Hi: mean + Z95*se}, nil
}
