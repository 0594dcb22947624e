package torch

import (
	"fmt"
	"math"
	"slices"
)

// Nemotron-H's moe blocks (NemotronHMoE, Nemotron 3 Nano 30B-A3B): a
// router scoring each expert by the sigmoid of its logit, choosing by
// score plus e_score_correction_bias within the topk_group best of n_group
// groups; relu² experts (up_proj, down_proj) on a latent of
// moe_latent_size where the config has one; a relu² shared expert of
// moe_shared_expert_intermediate_size. cgo/moe.cpp is the math.

// nemotronMoEKeys are NemotronHConfig's mixture-of-experts keys with their
// defaults (moe_latent_size's, null, is 0 here).
var nemotronMoEKeys = []struct {
	key string
	def float64
}{{"n_routed_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 7688},
	{"moe_shared_expert_intermediate_size", 7688}, {"moe_latent_size", 0}, {"n_group", 1}, {"topk_group", 1}}

// parseNemotronMoE reads the mixture-of-experts keys of a nemotron_h
// config (num_local_experts is n_routed_experts' alias). They are kept
// only where a block is moe: a dense model's config carries the class's
// defaults. n_shared_experts and moe_shared_expert_overlap are read by
// nothing in transformers (one shared expert always) and are ignored, as
// there.
func parseNemotronMoE(raw map[string]any, blocks []string) (MoE, error) {
	m := MoE{NormTopKProb: true, SparseStep: 1, Scaling: 1}
	ints := []*int{&m.Experts, &m.ExpertsPerToken, &m.Intermediate, &m.SharedIntermediate, &m.Latent, &m.Groups, &m.TopKGroup}
	for i, f := range nemotronMoEKeys {
		key := f.key
		if _, ok := raw[key]; !ok && key == "n_routed_experts" {
			key = "num_local_experts"
		}
		v, err := rawNumber(raw, key, f.def, key == "moe_latent_size")
		if err != nil {
			return m, err
		}
		if v != math.Trunc(v) || v < 0 || v > 1<<31 {
			return m, fmt.Errorf("%s must be a whole number at least 0, got %v", key, v)
		}
		*ints[i] = int(v)
	}
	var err error
	if m.Scaling, err = rawNumber(raw, "routed_scaling_factor", 1, false); err != nil {
		return m, err
	}
	if _, ok := raw["norm_topk_prob"]; ok {
		if m.NormTopKProb, err = rawBool(raw, "norm_topk_prob"); err != nil {
			return m, err
		}
	}
	if !slices.Contains(blocks, MoEBlock) {
		return MoE{}, nil
	}
	return m, m.validateNemotron()
}

// validateNemotron checks the settings of a Nemotron-H model with moe
// blocks, as NemotronHTopkRouter needs them.
func (m MoE) validateNemotron() error {
	switch {
	case m.Experts <= 0 || m.Intermediate <= 0 || m.SharedIntermediate <= 0:
		return fmt.Errorf("n_routed_experts, moe_intermediate_size and moe_shared_expert_intermediate_size must be positive")
	case m.ExpertsPerToken <= 0 || m.ExpertsPerToken > m.Experts:
		return fmt.Errorf("num_experts_per_tok %d must be in 1..n_routed_experts (%d)", m.ExpertsPerToken, m.Experts)
	case m.Groups <= 0 || m.Experts%m.Groups != 0 || m.Experts/m.Groups < 2:
		return fmt.Errorf("n_group %d must divide n_routed_experts (%d) into groups of at least 2 (the router ranks a group by its best two)",
			m.Groups, m.Experts)
	case m.TopKGroup <= 0 || m.TopKGroup > m.Groups:
		return fmt.Errorf("topk_group %d must be in 1..n_group (%d)", m.TopKGroup, m.Groups)
	case m.ExpertsPerToken > m.TopKGroup*(m.Experts/m.Groups):
		return fmt.Errorf("num_experts_per_tok %d exceeds the %d experts of topk_group groups", m.ExpertsPerToken,
			m.TopKGroup*(m.Experts/m.Groups))
	case math.IsInf(m.Scaling, 0) || math.IsNaN(m.Scaling):
		return fmt.Errorf("routed_scaling_factor must be finite, got %g", m.Scaling)
	}
	return nil
}

// setJSONNemotron puts the mixture-of-experts keys into set as
// NemotronHConfig writes them.
func (m MoE) setJSONNemotron(set, out map[string]any) {
	delete(out, "num_local_experts")
	set["n_routed_experts"], set["num_experts_per_tok"] = m.Experts, m.ExpertsPerToken
	set["moe_intermediate_size"], set["moe_shared_expert_intermediate_size"] = m.Intermediate, m.SharedIntermediate
	set["moe_latent_size"] = nil
	if m.Latent > 0 {
		set["moe_latent_size"] = m.Latent
	}
	set["n_group"], set["topk_group"], set["routed_scaling_factor"] = m.Groups, m.TopKGroup, m.Scaling
	set["norm_topk_prob"] = m.NormTopKProb
}
