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
