package config

import "testing"

// algorithm.rollout_correction auto turns token-level truncated IS on
// exactly when the rollouts decode in another precision than the
// training forward computes in; a named correction is kept as it is.
func TestRolloutCorrectionAuto(t *testing.T) {
	for _, c := range []struct {
		device, rollout, correction, want string
	}{
		{"f32", "auto", "auto", "off"},  // the engine decodes the model's own weights
		{"f32", "f32", "auto", "off"},   // the same precision, named
		{"f32", "bf16", "auto", "tis"},  // bf16 decoding, f32 training
		{"bf16", "bf16", "auto", "off"}, // both bf16
		{"bf16", "f32", "auto", "tis"},
		{"f32", "bf16", "off", "off"}, // asked off
		{"f32", "f32", "mis_seq", "mis_seq"},
	} {
		cfg := Default()
		cfg.Device.DType, cfg.Rollout.DType, cfg.Algorithm.RolloutCorrection = c.device, c.rollout, c.correction
		if got := cfg.RolloutCorrection(); got != c.want {
			t.Errorf("device.dtype %s, rollout.dtype %s, rollout_correction %s: %s, want %s", c.device, c.rollout, c.correction, got, c.want)
		}
	}
}
