// Package stat is the one place the project computes a mean and a spread,
// with the degrees of freedom always explicit: ddof 0 is the population
// variance (numpy's default), ddof 1 the Bessel-corrected sample variance
// (torch.std's default, as verl and RAGEN use for group statistics).
package stat

import "math"

// MeanVar returns the mean of xs and their variance
// sum((x - mean)^2) / (n - ddof), computed in two passes. The mean is NaN
// for no values; the variance is 0 when n <= ddof (one sample has no
// spread).
func MeanVar(xs []float64, ddof int) (mean, variance float64) {
	if len(xs) == 0 {
		return math.NaN(), 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) <= ddof {
		return mean, 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, ss / float64(len(xs)-ddof)
}

// MeanStd is MeanVar with the standard deviation, the square root of the
// variance.
func MeanStd(xs []float64, ddof int) (mean, std float64) {
	mean, v := MeanVar(xs, ddof)
	return mean, math.Sqrt(v)
}
