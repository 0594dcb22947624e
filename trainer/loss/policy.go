package loss

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

// PolicyInputs are the [B,T] tensors a policy loss reads.
type PolicyInputs struct {
	LogP    *torch.Tensor // the policy's logprobs, with gradient
	OldLogP *torch.Tensor // the old policy's, recomputed by the training forward before the update
	Adv     *torch.Tensor // the advantages
	Mask    *torch.Tensor // f32 0/1: the tokens the loss counts
	// Weight holds the rollout correction's per-token weights on the
	// policy-gradient term (algo.RolloutWeights); nil weighs every token 1.
	Weight *torch.Tensor
}

// PolicyTerms are what a policy loss computes per token, before the
// rollout correction's weights and the aggregation: the loss, and the 0/1
// bits of the tokens whose ratio (or weight) it clipped below and above.
// The bits carry no gradient.
type PolicyTerms struct {
	Loss, ClipLow, ClipHigh *torch.Tensor
}

// PolicyLossFunc builds a policy loss's per-token terms (the losses to
// minimise) from its inputs and settings (cfg.ClipLow, cfg.ClipHigh,
// cfg.DualClip).
type PolicyLossFunc func(s *torch.Scope, in PolicyInputs, cfg algo.LossConfig) PolicyTerms

var (
	policyMu     sync.RWMutex
	policyLosses = map[string]PolicyLossFunc{}
)

// RegisterPolicyLoss makes a policy loss available under name, as verl's
// POLICY_LOSS_REGISTRY does (core_algos.register_policy_loss). Like
// algo.Register it panics when name is taken or f is nil: programming
// errors made at init time. Each loss registers itself in its own file.
func RegisterPolicyLoss(name string, f PolicyLossFunc) {
	policyMu.Lock()
	defer policyMu.Unlock()
	if f == nil {
		panic("loss: RegisterPolicyLoss " + name + " has no function")
	}
	if _, dup := policyLosses[name]; dup {
		panic("loss: RegisterPolicyLoss called twice for " + name)
	}
	policyLosses[name] = f
}

// PolicyLossNamed returns the policy loss registered under name, or an
// error listing the known names.
func PolicyLossNamed(name string) (PolicyLossFunc, error) {
	policyMu.RLock()
	defer policyMu.RUnlock()
	if f, ok := policyLosses[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("unknown policy loss %q (known: %s)", name, strings.Join(policyLossNamesLocked(), ", "))
}

// PolicyLossNames lists the registered policy losses in alphabetical order.
func PolicyLossNames() []string {
	policyMu.RLock()
	defer policyMu.RUnlock()
	return policyLossNamesLocked()
}

func policyLossNamesLocked() []string {
	names := make([]string, 0, len(policyLosses))
	for n := range policyLosses {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Policy is a micro-batch's policy loss and its clip diagnostics.
type Policy struct {
	// Loss is this micro-batch's share of the mini-batch's policy loss.
	Loss *torch.Tensor
	// ClipLow and ClipHigh count the loss tokens whose ratio the loss
	// clipped below and above (sums over the mask, no gradient).
	ClipLow, ClipHigh *torch.Tensor
}

// PolicyLoss is the policy loss cfg.PolicyLoss names, each token's loss
// multiplied by the rollout correction's weight (when in.Weight is set)
// and aggregated by cfg.LossAgg over the mask:
//
//	L = agg_t( w_t * L_t )
//
// The weight is a constant (it carries no gradient): truncated importance
// sampling of the policy-gradient term, as verl's tis_imp_ratio and TRL's
// vllm_importance_sampling_correction apply it.
func PolicyLoss(s *torch.Scope, in PolicyInputs, cfg algo.LossConfig, n algo.Norm) (Policy, error) {
	f, err := PolicyLossNamed(cfg.PolicyLoss)
	if err != nil {
		return Policy{}, err
	}
	terms := f(s, in, cfg)
	l := terms.Loss
	if in.Weight != nil {
		l = s.Mul(l, in.Weight)
	}
	return Policy{
		Loss:     Aggregate(s, l, in.Mask, cfg.LossAgg, n),
		ClipLow:  s.MaskedSum(terms.ClipLow, in.Mask),
		ClipHigh: s.MaskedSum(terms.ClipHigh, in.Mask),
	}, nil
}

// logRatio is the clamped log-ratio logp - oldLogp (algo.MaxLogRatio, as
// verl bounds it before exp).
func logRatio(s *torch.Scope, in PolicyInputs) *torch.Tensor {
	return s.Clamp(s.Sub(in.LogP, in.OldLogP), -algo.MaxLogRatio, algo.MaxLogRatio)
}

// bit turns a boolean tensor into f32 0/1.
func bit(s *torch.Scope, b *torch.Tensor) *torch.Tensor { return s.To(b, s.Device(), torch.Float32) }
