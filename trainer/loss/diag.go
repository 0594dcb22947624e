package loss

import "github.com/agentrl/agentrl/torch"

// Diag are a micro-batch's policy diagnostics, the figures CleanRL logs
// besides the clip fractions (which the policy loss reports, Policy), as
// scalar tensors summed over the tokens of the loss mask (divide each by
// Tokens, summed over the micro-batches, for the per-token means). They
// are computed on the device beside the loss and carry no gradient.
type Diag struct {
	ApproxKL *torch.Tensor // the sum of (r - 1) - log r, Schulman's k3 of the old policy to the new
	Entropy  *torch.Tensor // the sum of the policy's entropy
	Tokens   *torch.Tensor // the number of tokens the mask selects
}

// Diagnose computes Diag from the logprobs under the current and the old
// policy, the per-token entropy and the mask (all [B,T]), with
// r = exp(logp - oldLogp).
func Diagnose(s *torch.Scope, logp, oldLogp, entropy, mask *torch.Tensor) Diag {
	logRatio := s.Sub(s.Detach(logp), oldLogp)
	r := s.Exp(logRatio)
	return Diag{
		ApproxKL: s.MaskedSum(s.Sub(s.SubScalar(r, 1), logRatio), mask),
		Entropy:  s.MaskedSum(s.Detach(entropy), mask),
		Tokens:   s.Sum(s.GtScalar(mask, 0)),
	}
}
