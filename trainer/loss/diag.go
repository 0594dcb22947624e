package loss

import "github.com/agentrl/agentrl/torch"

// Diag are a micro-batch's policy diagnostics, the figures CleanRL logs,
// as scalar tensors summed over the tokens of the loss mask (divide each
// by Tokens, summed over the micro-batches, for the per-token means). They
// are computed on the device beside the loss and carry no gradient.
type Diag struct {
	ClipLow  *torch.Tensor // tokens with A < 0 and r < 1 - eps_low: the low clip bit
	ClipHigh *torch.Tensor // tokens with A > 0 and r > 1 + eps_high: the high clip bit
	ApproxKL *torch.Tensor // the sum of (r - 1) - log r, Schulman's k3 of the old policy to the new
	Entropy  *torch.Tensor // the sum of the policy's entropy
	Tokens   *torch.Tensor // the number of tokens the mask selects
}

// Diagnose computes Diag from the logprobs under the current and the old
// policy, the advantages, the per-token entropy and the mask (all [B,T]),
// with r = exp(logp - oldLogp).
func Diagnose(s *torch.Scope, logp, oldLogp, adv, entropy, mask *torch.Tensor, clipLow, clipHigh float64) Diag {
	f32 := func(b *torch.Tensor) *torch.Tensor { return s.To(b, s.Device(), torch.Float32) }
	logRatio := s.Sub(s.Detach(logp), oldLogp)
	r := s.Exp(logRatio)
	low := s.Mul(f32(s.LtScalar(adv, 0)), f32(s.LtScalar(r, 1-clipLow)))
	high := s.Mul(f32(s.GtScalar(adv, 0)), f32(s.GtScalar(r, 1+clipHigh)))
	return Diag{
		ClipLow:  s.MaskedSum(low, mask),
		ClipHigh: s.MaskedSum(high, mask),
		ApproxKL: s.MaskedSum(s.Sub(s.SubScalar(r, 1), logRatio), mask),
		Entropy:  s.MaskedSum(s.Detach(entropy), mask),
		Tokens:   s.Sum(s.GtScalar(mask, 0)),
	}
}
