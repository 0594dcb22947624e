package learner

import "time"

// Stats are an update's diagnostics: the losses are means over optimizer
// steps of each mini-batch's loss, the per-token figures (entropy, clip
// fractions, approximate KL) means over the loss tokens. While
// accumulating they are sums, which add up across ranks.
type Stats struct {
	PolicyLoss, KLLoss, Entropy, ValueLoss float64
	ClipFracLow, ClipFracHigh, ApproxKL    float64
	GradNorm, CriticGradNorm               float64
	// RouterAuxLoss is the routers' load-balancing loss of a policy with
	// mixture-of-experts layers whose config asks for it in the loss
	// (output_router_logits; RouterAux then), mean over optimizer steps.
	RouterAuxLoss  float64
	RouterAux      bool
	Steps, Skipped int
	SkippedIDs     []string
	Tokens         int // loss tokens processed (per epoch pass)
	// UpdateTokens are the tokens the policy's training forwards ran
	// through the model over all epochs, a packed episode's shared
	// prefixes once (algorithm.pack_segments); SampleTokens the same
	// trajectories' tokens as samples of their own. Padding is left out.
	UpdateTokens, SampleTokens int
	LR                         float64 // the policy learning rate of the last step
	Timing                     Timing  // where this rank's time went
	policySteps, criticSteps   int     // policySteps counts skipped steps too
}

// Timing is where an update's wall time went, by phase. On a GPU, work
// still queued when a phase ends is counted in the phase that waits for
// it.
type Timing struct {
	Prepare    time.Duration // old (unless from the step) and reference logprobs and values, without gradients
	Advantages time.Duration // the KL to the reference and the estimator (and the mismatch, after the step, when it gave the old logprobs)
	Forward    time.Duration // the micro-batches' training forwards and losses
	Backward   time.Duration // their backward passes and the read-back of their scalars
	Optim      time.Duration // all-reduce, gradient clipping and the optimizer steps
}

// finish turns the sums into means, after adding up the ranks' sums.
func (l *Learner) finish(st *Stats) error {
	if err := l.sumStats(st); err != nil {
		return err
	}
	if n := float64(st.policySteps); n > 0 {
		st.PolicyLoss /= n
		st.KLLoss /= n
		st.RouterAuxLoss /= n
		if l.mode == SharedCritic {
			st.ValueLoss /= n
		}
	}
	if n := float64(st.Tokens); n > 0 {
		st.Entropy /= n
		st.ClipFracLow /= n
		st.ClipFracHigh /= n
		st.ApproxKL /= n
	}
	if st.Steps > 0 {
		st.GradNorm /= float64(st.Steps)
	}
	if st.criticSteps > 0 {
		st.CriticGradNorm /= float64(st.criticSteps)
		if l.mode == SeparateCritic {
			st.ValueLoss /= float64(st.criticSteps)
		}
	}
	return nil
}

// sumStats adds up the per-rank sums of the diagnostics (the step counts
// and gradient norms are already the same on every rank).
func (l *Learner) sumStats(st *Stats) error {
	if l.dist.World() == 1 {
		return nil
	}
	v := []float64{st.PolicyLoss, st.KLLoss, st.Entropy, st.ValueLoss, st.ClipFracLow, st.ClipFracHigh, st.ApproxKL,
		float64(st.Tokens), float64(st.UpdateTokens), float64(st.SampleTokens), st.RouterAuxLoss}
	if err := l.dist.Sum(v); err != nil {
		return err
	}
	st.PolicyLoss, st.KLLoss, st.Entropy, st.ValueLoss, st.ClipFracLow, st.ClipFracHigh, st.ApproxKL = v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	st.Tokens, st.UpdateTokens, st.SampleTokens, st.RouterAuxLoss = int(v[7]), int(v[8]), int(v[9]), v[10]
	return nil
}
