package algo

import (
	"fmt"
	"math"
	"sort"
)

// The echo-trap signals.
const (
	SignalRewardStdCollapse = "reward_std_collapse" // within-group reward std fell far below its peak
	SignalEntropyCollapse   = "entropy_collapse"    // policy entropy fell far below its peak
	SignalGradNormSpike     = "grad_norm_spike"     // gradient norm far above its running median
	SignalGradNormNonFinite = "grad_norm_nonfinite" // gradient norm is NaN or infinite
)

// minGradHistory is how many past gradient norms the spike test needs.
const minGradHistory = 3

// IterMetrics are the numbers of one training iteration that the echo-trap
// tracker watches. A NaN RewardStd or Entropy means "not measured" and is
// skipped; a NaN GradNorm is reported.
type IterMetrics struct {
	Iteration int
	RewardStd float64 // mean within-group reward std of the batch (GroupRewardStd)
	GradNorm  float64 // global gradient norm before clipping
	Entropy   float64 // mean policy entropy over action tokens
}

// Warning is one echo-trap signal raised at an iteration.
type Warning struct {
	Iteration int
	Signal    string  // one of the Signal* constants
	Value     float64 // the observed value
	Reference float64 // the peak or running median it was compared with
}

// String renders the warning for a log line.
func (w Warning) String() string {
	return fmt.Sprintf("iteration %d: %s: %.4g (reference %.4g)", w.Iteration, w.Signal, w.Value, w.Reference)
}

// EchoTrapConfig sets the thresholds of the echo-trap signals. They are
// heuristics for the collapse RAGEN describes, not values from the paper.
type EchoTrapConfig struct {
	// RewardStdDrop flags a reward-std collapse when RewardStd falls below
	// this fraction of its peak so far, in [0, 1]; 0 disables.
	RewardStdDrop float64 `yaml:"reward_std_drop"`
	// EntropyDrop flags an entropy collapse when Entropy falls below this
	// fraction of its peak so far, in [0, 1]; 0 disables.
	EntropyDrop float64 `yaml:"entropy_drop"`
	// GradSpike flags a spike when GradNorm exceeds this multiple of the
	// median of the last Window gradient norms; 0 disables, else > 1.
	GradSpike float64 `yaml:"grad_spike"`
	// Window is how many past gradient norms the running median spans, at
	// least 3.
	Window int `yaml:"window"`
}

// DefaultEchoTrapConfig flags a reward std or entropy below a tenth of its
// peak, and a gradient norm above five times the median of the last ten.
func DefaultEchoTrapConfig() EchoTrapConfig {
	return EchoTrapConfig{RewardStdDrop: 0.1, EntropyDrop: 0.1, GradSpike: 5, Window: 10}
}

// EchoTrap watches the signals that precede RAGEN's "echo trap" (Wang et
// al. 2025, arXiv:2504.20073): within-group reward variance collapsing,
// entropy collapsing, and gradient-norm spikes. It only reports; it changes
// nothing. Not safe for concurrent use.
type EchoTrap struct {
	cfg           EchoTrapConfig
	peakRewardStd float64
	peakEntropy   float64
	grads         []float64 // the last cfg.Window finite gradient norms, oldest first
}

// NewEchoTrap returns a tracker with the given thresholds, or an error
// naming the first one out of range.
func NewEchoTrap(cfg EchoTrapConfig) (*EchoTrap, error) {
	switch {
	case !(cfg.RewardStdDrop >= 0 && cfg.RewardStdDrop <= 1):
		return nil, fmt.Errorf("echo trap: reward_std_drop %v outside [0, 1]", cfg.RewardStdDrop)
	case !(cfg.EntropyDrop >= 0 && cfg.EntropyDrop <= 1):
		return nil, fmt.Errorf("echo trap: entropy_drop %v outside [0, 1]", cfg.EntropyDrop)
	case !(cfg.GradSpike == 0 || cfg.GradSpike > 1):
		return nil, fmt.Errorf("echo trap: grad_spike %v must be 0 (off) or > 1", cfg.GradSpike)
	case cfg.Window < minGradHistory:
		return nil, fmt.Errorf("echo trap: window %d below %d", cfg.Window, minGradHistory)
	}
	return &EchoTrap{cfg: cfg}, nil
}

// Observe records one iteration and returns the signals it raises, nil
// when none.
func (e *EchoTrap) Observe(m IterMetrics) []Warning {
	var out []Warning
	warn := func(signal string, value, ref float64) {
		out = append(out, Warning{Iteration: m.Iteration, Signal: signal, Value: value, Reference: ref})
	}

	if !math.IsNaN(m.RewardStd) {
		e.peakRewardStd = max(e.peakRewardStd, m.RewardStd)
		if m.RewardStd < e.cfg.RewardStdDrop*e.peakRewardStd {
			warn(SignalRewardStdCollapse, m.RewardStd, e.peakRewardStd)
		}
	}

	if !math.IsNaN(m.Entropy) {
		e.peakEntropy = max(e.peakEntropy, m.Entropy)
		if m.Entropy < e.cfg.EntropyDrop*e.peakEntropy {
			warn(SignalEntropyCollapse, m.Entropy, e.peakEntropy)
		}
	}

	if math.IsNaN(m.GradNorm) || math.IsInf(m.GradNorm, 0) {
		warn(SignalGradNormNonFinite, m.GradNorm, median(e.grads))
		return out
	}
	if e.cfg.GradSpike > 0 && len(e.grads) >= minGradHistory {
		if med := median(e.grads); m.GradNorm > e.cfg.GradSpike*med {
			warn(SignalGradNormSpike, m.GradNorm, med)
		}
	}
	e.grads = append(e.grads, m.GradNorm)
	if len(e.grads) > e.cfg.Window {
		e.grads = e.grads[1:]
	}
	return out
}

// median of xs (mean of the middle two for an even count), NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
