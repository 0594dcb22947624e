package report

import (
	"math"
	"strconv"
)

// axis is one axis of a chart: the value range it spans and where its
// ticks (and grid lines) fall.
type axis struct {
	lo, hi float64   // the values at the two ends of the axis
	step   float64   // distance between ticks
	ticks  []float64 // multiples of step within [lo, hi]
}

// niceStep returns 1, 2 or 5 times a power of ten, the smallest such step
// that cuts span into at most n intervals.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		return mag
	case f <= 2:
		return 2 * mag
	case f <= 5:
		return 5 * mag
	}
	return 10 * mag
}

// valueAxis spans the data range [min, max] padded by 5% on each side (a
// flat series gets 10% of its value, or 1 around zero) with about five
// ticks.
func valueAxis(min, max float64) axis {
	pad := (max - min) * 0.05
	if pad == 0 {
		pad = math.Abs(min) * 0.1
		if pad == 0 {
			pad = 1
		}
	}
	a := axis{lo: min - pad, hi: max + pad}
	a.step = niceStep(a.hi-a.lo, 5)
	a.ticks = multiples(a.lo, a.hi, a.step)
	return a
}

// iterationAxis spans the iterations [min, max] padded by 2% (one
// iteration either side when there is only one) with whole-number ticks.
func iterationAxis(min, max float64) axis {
	pad := (max - min) * 0.02
	if pad == 0 {
		pad = 1
	}
	a := axis{lo: min - pad, hi: max + pad}
	a.step = math.Max(1, niceStep(a.hi-a.lo, 8))
	a.ticks = multiples(a.lo, a.hi, a.step)
	return a
}

// multiples lists the multiples of step in [lo, hi], computed from their
// index so that rounding errors do not pile up.
func multiples(lo, hi, step float64) []float64 {
	const eps = 1e-9
	first := math.Ceil(lo/step - eps)
	last := math.Floor(hi/step + eps)
	var out []float64
	for i := first; i <= last; i++ {
		out = append(out, i*step)
	}
	return out
}

// tickLabel formats a tick value with as many decimals as its step needs:
// thousands and millions as "15k" and "2.5M" once the step is coarse
// enough, and tiny steps in exponent form unless the values are far from
// zero (a ratio near 1 that moves by 1e-6 keeps its digits: "1.000002").
func tickLabel(v, step float64) string {
	if math.Abs(v) < step*1e-6 {
		v = 0 // no "-0" or "1e-17" from rounding
	}
	a := math.Abs(v)
	switch {
	case a >= 1e7 && step >= 1e5:
		return decimals(v/1e6, step/1e6) + "M"
	case a >= 1e4 && step >= 100:
		return decimals(v/1e3, step/1e3) + "k"
	case step < 1e-5 && a < 1e3*step:
		return strconv.FormatFloat(v, 'e', 1, 64)
	}
	return decimals(v, step)
}

// decimals formats v with the decimals that step needs (none for 1, one for
// 0.5 or 0.2, two for 0.05 ...).
func decimals(v, step float64) string {
	d := int(math.Max(0, math.Ceil(-math.Log10(step)-1e-9)))
	return strconv.FormatFloat(v, 'f', d, 64)
}
