package store

import "github.com/agentrl/agentrl/envs/reward"

// matchesGold reports whether answer equals one of the gold answers after
// the official SQuAD/HotpotQA normalisation (reward.ExactMatch), the same
// rule the reward uses. An answer that normalises to "" never matches, so
// an episode without an answer is never counted correct.
func matchesGold(answer string, gold []string) bool {
	if reward.Normalize(answer) == "" {
		return false
	}
	return reward.Best(reward.ExactMatch, answer, gold) == 1
}
