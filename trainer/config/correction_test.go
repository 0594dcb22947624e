package config

import "testing"

// algorithm.rollout_correction auto turns token-level truncated IS on
// exactly when the behaviour logprobs may come from another distribution
// than the update's old policy: the rollouts decode in another precision
// than the training forward computes in, or they may be sampled by older
// weights (rollout.max_staleness > 0); a named correction, off included,
// is kept as it is.
func TestRolloutCorrectionAuto(t *testing.T) {
	for _, c := range []struct {
		device, rollout, correction string
		staleness                   int
		want                        string
	}{
		{"f32", "auto", "auto", 0, "off"},  // the engine decodes the model's own weights
		{"f32", "f32", "auto", 0, "off"},   // the same precision, named
		{"f32", "bf16", "auto", 0, "tis"},  // bf16 decoding, f32 training
		{"bf16", "bf16", "auto", 0, "off"}, // both bf16
		{"bf16", "f32", "auto", 0, "tis"},
		{"f32", "bf16", "off", 0, "off"}, // asked off
		{"f32", "f32", "mis_seq", 0, "mis_seq"},
		{"f32", "auto", "auto", 1, "tis"}, // turns up to one version old: decoupled PPO
		{"f32", "auto", "auto", 4, "tis"},
		{"bf16", "f32", "auto", 2, "tis"}, // both reasons
		{"f32", "auto", "off", 1, "off"},  // asked off: stale turns unweighted
		{"f32", "auto", "mis", 1, "mis"},
	} {
		cfg := Default()
		cfg.Device.DType, cfg.Rollout.DType, cfg.Algorithm.RolloutCorrection = c.device, c.rollout, c.correction
		cfg.Rollout.MaxStaleness = c.staleness
		if got := cfg.RolloutCorrection(); got != c.want {
			t.Errorf("device.dtype %s, rollout.dtype %s, max_staleness %d, rollout_correction %s: %s, want %s",
				c.device, c.rollout, c.staleness, c.correction, got, c.want)
		}
	}
	// The defaults as a user meets them: the synchronous default job
	// keeps the correction off; the same job with max_staleness 1 weighs
	// its turns.
	cfg := Default()
	if got := cfg.RolloutCorrection(); got != "off" {
		t.Errorf("default job: %s, want off", got)
	}
	cfg.Rollout.MaxStaleness = 1
	if got := cfg.RolloutCorrection(); got != "tis" || cfg.Algorithm.RolloutCorrectionBound != 2 {
		t.Errorf("default job with max_staleness 1: %s with C %v, want tis with C 2", got, cfg.Algorithm.RolloutCorrectionBound)
	}
}
