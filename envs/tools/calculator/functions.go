package calculator

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// function is a named function of the calculator.
type function struct {
	minArgs, maxArgs int // maxArgs < 0: no upper bound
	eval             func(args []float64) (float64, error)
}

// arity describes how many arguments f takes.
func (f function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d argument(s)", f.minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
}

var constants = map[string]float64{"pi": math.Pi, "e": math.E}

// one wraps a total function of one argument.
func one(f func(float64) float64) function {
	return function{1, 1, func(a []float64) (float64, error) { return f(a[0]), nil }}
}

var functions = map[string]function{
	"abs":   one(math.Abs),
	"floor": one(math.Floor),
	"ceil":  one(math.Ceil),
	"exp":   one(math.Exp),
	"sqrt": {1, 1, func(a []float64) (float64, error) {
		if a[0] < 0 {
			return 0, fmt.Errorf("square root of a negative number")
		}
		return math.Sqrt(a[0]), nil
	}},
	"ln":    {1, 1, func(a []float64) (float64, error) { return logBase(a[0], math.E) }},
	"log10": {1, 1, func(a []float64) (float64, error) { return logBase(a[0], 10) }},
	"log2":  {1, 1, func(a []float64) (float64, error) { return logBase(a[0], 2) }},
	"log": {1, 2, func(a []float64) (float64, error) {
		if len(a) == 2 {
			return logBase(a[0], a[1])
		}
		return logBase(a[0], math.E)
	}},
	"round": {1, 2, round},
	"min":   {1, -1, func(a []float64) (float64, error) { return slices.Min(a), nil }},
	"max":   {1, -1, func(a []float64) (float64, error) { return slices.Max(a), nil }},
}

// functionNames lists the function names, sorted, for error messages.
func functionNames() string {
	names := make([]string, 0, len(functions))
	for n := range functions {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// logBase is the logarithm of x in base b.
func logBase(x, b float64) (float64, error) {
	if x <= 0 {
		return 0, fmt.Errorf("logarithm of a number that is not positive")
	}
	if b <= 0 || b == 1 {
		return 0, fmt.Errorf("logarithm base must be positive and not 1")
	}
	switch b { // the dedicated functions are exact on powers of their base
	case math.E:
		return math.Log(x), nil
	case 10:
		return math.Log10(x), nil
	case 2:
		return math.Log2(x), nil
	}
	return math.Log(x) / math.Log(b), nil
}

// round rounds half away from zero, to a whole number or to args[1]
// decimal places (an integer from -15 to 15).
func round(args []float64) (float64, error) {
	if len(args) == 1 {
		return math.Round(args[0]), nil
	}
	d := args[1]
	if d != math.Trunc(d) || d < -15 || d > 15 {
		return 0, fmt.Errorf("decimal places must be an integer from -15 to 15")
	}
	p := math.Pow(10, d)
	return math.Round(args[0]*p) / p, nil
}
