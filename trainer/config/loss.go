package config

import "github.com/agentrl/agentrl/trainer/algo"

// Loss is the policy, KL, entropy and value loss configuration the
// algorithm section describes: the trainer's update uses it and Validate
// checks it, so the two cannot disagree. KLInLoss is left to the trainer
// (it also needs a reference model).
func (c Config) Loss() algo.LossConfig {
	a := c.Algorithm
	return algo.LossConfig{PolicyLoss: a.PolicyLoss, ClipLow: a.ClipLow, ClipHigh: a.ClipHigh, DualClip: a.DualClip, Agg: a.LossAgg,
		Horizon: c.Env.MaxTokens, KLCoef: a.KLCoef, KLEstimator: a.KLEstimator,
		EntropyCoef: a.EntropyCoef, VFCoef: a.VFCoef, ValueClip: a.ValueClip}
}

// RolloutCorrection is algorithm.rollout_correction with auto resolved:
// truncated importance sampling per token ("tis") when the rollouts decode
// in another precision than the training forward computes in
// (rollout.dtype set and different from device.dtype), "off" otherwise.
func (c Config) RolloutCorrection() string {
	rc := c.Algorithm.RolloutCorrection
	if rc != "auto" {
		return rc
	}
	if dt := c.Rollout.DType; dt != "auto" && dt != c.Device.DType {
		return "tis"
	}
	return "off"
}
