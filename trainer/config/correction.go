package config

// RolloutCorrection is algorithm.rollout_correction with auto resolved:
// truncated importance sampling per token ("tis", weight min(r, C) with r
// = pi_old/pi_behaviour) whenever the behaviour logprobs may come from
// another distribution than the update's old policy: the rollouts decode
// in another precision than the training forward computes in
// (rollout.dtype set and different from device.dtype), or they may be
// sampled by older weights (rollout.max_staleness > 0: with the old
// logprobs recomputed at the update as the proximal policy, that is
// decoupled PPO, as AReaL and verl correct asynchronous rollouts). "off"
// otherwise: the synchronous loop in one precision, whose behaviour and
// old policies are the same weights.
func (c Config) RolloutCorrection() string {
	rc := c.Algorithm.RolloutCorrection
	if rc != "auto" {
		return rc
	}
	if dt := c.Rollout.DType; dt != "auto" && dt != c.Device.DType {
		return "tis"
	}
	if c.Rollout.MaxStaleness > 0 {
		return "tis"
	}
	return "off"
}
