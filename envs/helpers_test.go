package envs

import "math"

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
