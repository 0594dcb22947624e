package torch

import (
	"fmt"
	"math"
)

// parseMoE reads the mixture-of-experts keys of a qwen3_moe config.json
// with Qwen3MoeConfig's defaults and types: num_experts 128 (also read
// as num_local_experts, the name transformers 5 saves it under; both
// present and different is refused), num_experts_per_tok 8,
// moe_intermediate_size 768, norm_topk_prob false, decoder_sparse_step 1,
// mlp_only_layers [] (null too), output_router_logits false,
// router_aux_loss_coef 0.001.
func parseMoE(raw map[string]any) (MoE, error) {
	m := MoE{}
	whole := func(key string, def float64) (int, error) {
		v, err := rawNumber(raw, key, def, false)
		if err != nil {
			return 0, err
		}
		if v != math.Trunc(v) || math.Abs(v) > 1<<31 {
			return 0, fmt.Errorf("%s must be a whole number, got %v", key, v)
		}
		return int(v), nil
	}
	var err error
	if m.Experts, err = whole("num_experts", 128); err != nil {
		return m, err
	}
	if _, ok := raw["num_local_experts"]; ok {
		local, err := whole("num_local_experts", 0)
		if err != nil {
			return m, err
		}
		if _, both := raw["num_experts"]; both && local != m.Experts {
			return m, fmt.Errorf("num_experts %d and num_local_experts %d disagree (transformers reads them as one setting)", m.Experts, local)
		}
		m.Experts = local
	}
	if m.ExpertsPerToken, err = whole("num_experts_per_tok", 8); err != nil {
		return m, err
	}
	if m.Intermediate, err = whole("moe_intermediate_size", 768); err != nil {
		return m, err
	}
	if m.SparseStep, err = whole("decoder_sparse_step", 1); err != nil {
		return m, err
	}
	if m.NormTopKProb, err = rawBool(raw, "norm_topk_prob"); err != nil {
		return m, err
	}
	if m.OutputRouterLogits, err = rawBool(raw, "output_router_logits"); err != nil {
		return m, err
	}
	if m.RouterAuxLossCoef, err = rawNumber(raw, "router_aux_loss_coef", 0.001, false); err != nil {
		return m, err
	}
	if v, ok := raw["mlp_only_layers"]; ok && v != nil {
		l, ok := v.([]any)
		if !ok {
			return m, fmt.Errorf("mlp_only_layers must be a list of layer indices, got %s", jsonText(v))
		}
		for _, x := range l {
			f, ok := x.(float64)
			if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
				return m, fmt.Errorf("mlp_only_layers must be a list of layer indices, got %s", jsonText(v))
			}
			m.MLPOnlyLayers = append(m.MLPOnlyLayers, int(f))
		}
	}
	return m, nil
}

// parseMoE35 reads the mixture-of-experts keys of a qwen3_5_moe_text
// config with Qwen3_5MoeTextConfig's defaults and types: num_experts 256,
// num_experts_per_tok 8, moe_intermediate_size 512,
// shared_expert_intermediate_size 512, output_router_logits false,
// router_aux_loss_coef 0.001. The class has every layer sparse and always
// divides the top-k probabilities by their sum: norm_topk_prob,
// decoder_sparse_step and mlp_only_layers (Qwen3 MoE's keys, which it does
// not read) are refused unless they say the same (true, 1, []), and
// num_local_experts is refused (it reads num_experts only).
func parseMoE35(raw map[string]any) (MoE, error) {
	if _, ok := raw["num_local_experts"]; ok {
		return MoE{}, fmt.Errorf("num_local_experts is not supported for %s (Qwen3_5MoeTextConfig reads num_experts)", qwen35MoE)
	}
	for _, k := range []string{"decoder_sparse_step", "mlp_only_layers", "norm_topk_prob"} {
		v, ok := raw[k]
		agrees := !ok || v == nil && k == "mlp_only_layers"
		switch k {
		case "decoder_sparse_step":
			agrees = agrees || v == 1.0
		case "mlp_only_layers":
			l, isList := v.([]any)
			agrees = agrees || isList && len(l) == 0
		case "norm_topk_prob":
			agrees = agrees || v == true
		}
		if !agrees {
			return MoE{}, fmt.Errorf("%s %s is not supported for %s (transformers' Qwen3_5MoeTextConfig has every layer sparse "+
				"and its router always divides the top-k probabilities by their sum)", k, jsonText(v), qwen35MoE)
		}
	}
	m := MoE{NormTopKProb: true, SparseStep: 1}
	for _, f := range []struct {
		key string
		v   *int
		def int
	}{{"num_experts", &m.Experts, 256}, {"num_experts_per_tok", &m.ExpertsPerToken, 8},
		{"moe_intermediate_size", &m.Intermediate, 512}, {"shared_expert_intermediate_size", &m.SharedIntermediate, 512}} {
		v, err := rawNumber(raw, f.key, float64(f.def), false)
		if err != nil {
			return m, err
		}
		if v != math.Trunc(v) || math.Abs(v) > 1<<31 {
			return m, fmt.Errorf("%s must be a whole number, got %v", f.key, v)
		}
		*f.v = int(v)
	}
	var err error
	if m.OutputRouterLogits, err = rawBool(raw, "output_router_logits"); err != nil {
		return m, err
	}
	if m.RouterAuxLossCoef, err = rawNumber(raw, "router_aux_loss_coef", 0.001, false); err != nil {
		return m, err
	}
	return m, nil
}

// validate checks the settings of a model_type's config: zero for the
// dense families, in range for qwen3_moe and qwen3_5_moe_text (which has
// experts and a shared expert in every layer).
func (m MoE) validate(modelType string, layers int) error {
	if modelType != "qwen3_moe" && modelType != qwen35MoE {
		if m.Experts != 0 || m.SharedIntermediate != 0 {
			return fmt.Errorf("model_type %s has no mixture-of-experts layers, but %d experts are set", modelType, m.Experts)
		}
		return nil
	}
	if modelType == qwen35MoE {
		switch {
		case m.Experts <= 0:
			return fmt.Errorf("num_experts must be positive for %s (every layer is sparse), got %d", modelType, m.Experts)
		case m.SharedIntermediate <= 0:
			return fmt.Errorf("shared_expert_intermediate_size must be positive, got %d", m.SharedIntermediate)
		case !m.NormTopKProb || m.SparseStep != 1 || len(m.MLPOnlyLayers) > 0:
			return fmt.Errorf("%s has every layer sparse with normalised top-k probabilities", modelType)
		}
	} else if m.SharedIntermediate != 0 {
		return fmt.Errorf("shared_expert_intermediate_size is not supported for %s (Qwen3 MoE has no shared expert)", modelType)
	}
	switch {
	case m.Experts < 0:
		return fmt.Errorf("num_experts must not be negative, got %d", m.Experts)
	case m.SparseStep <= 0:
		return fmt.Errorf("decoder_sparse_step must be positive, got %d", m.SparseStep)
	case m.Experts == 0:
		return nil // every layer dense, as in transformers
	case m.ExpertsPerToken <= 0 || m.ExpertsPerToken > m.Experts:
		return fmt.Errorf("num_experts_per_tok %d must be in 1..num_experts (%d)", m.ExpertsPerToken, m.Experts)
	case m.Intermediate <= 0:
		return fmt.Errorf("moe_intermediate_size must be positive, got %d", m.Intermediate)
	case layers > maxMoELayers:
		return fmt.Errorf("num_hidden_layers %d is not supported with mixture-of-experts layers (at most %d)", layers, maxMoELayers)
	case m.RouterAuxLossCoef < 0 || math.IsInf(m.RouterAuxLossCoef, 0) || math.IsNaN(m.RouterAuxLossCoef):
		return fmt.Errorf("router_aux_loss_coef must be a finite number at least 0, got %g", m.RouterAuxLossCoef)
	}
	return nil
}

// setJSON puts the settings into set, the keys config.json is written
// with (out: the keys it was read with): the expert count under the name
// it was read under, num_experts when neither.
func (m MoE) setJSON(set, out map[string]any) {
	key := "num_experts"
	if _, ok := out["num_local_experts"]; ok {
		key = "num_local_experts"
	}
	set[key] = m.Experts
	set["num_experts_per_tok"] = m.ExpertsPerToken
	set["moe_intermediate_size"] = m.Intermediate
	set["norm_topk_prob"] = m.NormTopKProb
	set["decoder_sparse_step"] = m.SparseStep
	only := m.MLPOnlyLayers
	if only == nil {
		only = []int{}
	}
	set["mlp_only_layers"] = only
	set["output_router_logits"] = m.OutputRouterLogits
	set["router_aux_loss_coef"] = m.RouterAuxLossCoef
}

// setJSON35 puts the settings of a qwen3_5_moe_text config into set, the
// keys config.json is written with (those Qwen3_5MoeTextConfig reads).
func (m MoE) setJSON35(set map[string]any) {
	set["num_experts"] = m.Experts
	set["num_experts_per_tok"] = m.ExpertsPerToken
	set["moe_intermediate_size"] = m.Intermediate
	set["shared_expert_intermediate_size"] = m.SharedIntermediate
	set["output_router_logits"] = m.OutputRouterLogits
	set["router_aux_loss_coef"] = m.RouterAuxLossCoef
}
