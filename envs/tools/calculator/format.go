package calculator

import (
	"math"
	"strconv"
)

// Format renders a result compactly: rounded to 15 significant digits (so
// 0.1+0.2 shows as 0.3), whole numbers below 1e15 without a decimal point,
// others with the fewest digits that read back as the rounded value, in
// plain notation from 1e-6 to 1e15 (0.333333333333333, 1234567.5) and in
// scientific notation outside (1e-07, 1.5e+20).
func Format(x float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 15, 64), 64)
	if err != nil { // cannot happen for a finite x; keep x as it is
		r = x
	}
	if r == math.Trunc(r) && math.Abs(r) < 1e15 {
		return strconv.FormatInt(int64(r), 10)
	}
	if a := math.Abs(r); a >= 1e-6 && a < 1e15 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}
