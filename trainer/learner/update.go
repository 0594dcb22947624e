package learner

import (
	"fmt"
	"github.com/agentrl/agentrl/trainer/metric"
	"math"
	"slices"
	"time"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/loss"
	"github.com/agentrl/agentrl/trajectory"
)

// This file is one update, top to bottom: Update picks the path (old
// logprobs recomputed, or taken from the step), each path prepares the
// data, computes the advantages and runs the epochs, and every mini-batch
// is one optimizer step whose micro-batch loop builds the loss, back-
// propagates it and reads its figures back. The batch layout (units,
// micro-batches, packing) is in batch.go, the model's forward in
// forward.go, the losses in trainer/loss, the estimators in trainer/algo.

// UpdateResult is what an update did: its steps' figures, the figures of
// the data it started from, and whether the old logprobs came from the
// update's one optimizer step.
type UpdateResult struct {
	Stats
	metric.Learned
	// OldFromStep is true when the old logprobs (and the trajectories'
	// TrainLogprobs and Entropies) came from the training forward of the
	// update's one optimizer step, false when a pass of their own
	// recomputed them before it (oldFromStep says when).
	OldFromStep bool
}

// TokenData are the per-token arrays an update needs besides the
// trajectory's own (index j holds token j's): the old policy's logprobs
// (recomputed before the update, or nil until the update's one step fills
// them: oldFromStep), the reference's logprobs (KL term), the values
// before the update, and the rollout correction's weights on the
// policy-gradient term (nil without a correction).
type TokenData struct {
	Old, Ref, Values, Weight []float32
}

// TokenTable holds each trajectory's TokenData.
type TokenTable map[*trajectory.Trajectory]*TokenData

// Update learns from an iteration's batch, in CleanRL's order: the
// variance filter, the old and reference logprobs and the values, the KL
// to the reference, the advantages, then epochs of shuffled mini-batches,
// each split into micro-batches whose gradients accumulate before one
// optimizer step. Iterations up to the critic's warm-up train the critic
// alone. When the update is on-policy (oldFromStep) the old logprobs come
// from the training forward of its one step instead (updateOnPolicy). A
// non-finite loss or gradient norm skips its step (its gradients are
// dropped) and records the mini-batch's trajectory ids. The result's
// Timing says where the time went.
func (l *Learner) Update(iter int, b Batch) (UpdateResult, error) {
	var r UpdateResult
	// DAPO's soft overlong punishment is part of the reward.
	r.OverlongPenalty = l.s.Overlong.PunishOverlong(b.Trajectories)
	// RAGEN filters rollouts before computing anything on them.
	r.GroupRewardStd = algo.GroupRewardStd(b.Trajectories)
	train, dropped := algo.FilterGroupsByVariance(b.Trajectories, l.s.FilterKeepRatio)
	r.GroupsDropped = dropped
	trainPolicy := iter > l.s.CriticWarmup || l.critic == nil
	var err error
	if l.oldFromStep(train, trainPolicy) {
		err = l.updateOnPolicy(b.of(train), &r)
	} else {
		err = l.updateRecomputed(b.of(train), trainPolicy, &r)
	}
	if err != nil {
		return r, err
	}
	l.steps += r.Steps
	return r, nil
}

// oldFromStep says whether an update of train takes PPO's old logprobs
// from the training forward of its optimizer step instead of recomputing
// them, without gradients, in a pass of their own before it (as TRL's
// GRPOTrainer does with num_iterations 1). That is exact when the policy
// that computes the old logprobs is the one of the training forward, and
// nothing needs them before that forward:
//
//   - the setting is not "recompute";
//   - one epoch of one mini-batch covering the whole batch: the batch is
//     learned in exactly one optimizer step, taken from the weights the
//     recompute would use;
//   - the policy trains (not the critic's warm-up, whose steps run no
//     policy loss to take them from);
//   - no rollout correction: its weights are computed from the old
//     logprobs before the step;
//   - no KL to a reference in the rewards: the advantages, computed before
//     the step, include it, and it is computed from the old logprobs;
//   - no LoRA dropout: the training forward drops inputs of the adapters
//     at random, the recompute does not.
//
// The advantage estimators (trainer/algo) read the rewards, the values and
// that KL only, so nothing else needs the old logprobs before the step.
// The ratio at the step is then exactly 1, as it is with the recompute:
// a step over the whole batch runs the recompute pass's rows (epochs).
func (l *Learner) oldFromStep(train []*trajectory.Trajectory, trainPolicy bool) bool {
	s := l.s
	lora := l.policy.LoRA()
	return s.OldLogprobs != "recompute" && s.Epochs == 1 && s.MiniBatch >= len(train) && trainPolicy &&
		(s.RolloutCorrection == "" || s.RolloutCorrection == "off") && !(s.Loss.KLMode == "reward" && l.ref != nil) &&
		(lora == nil || lora.Dropout == 0)
}

// updateRecomputed is the update whose old logprobs a pass of their own
// recomputes before it: the mismatch, the rollout correction and the KL
// to the reference are measured from them before the advantages.
func (l *Learner) updateRecomputed(train Batch, trainPolicy bool, r *UpdateResult) error {
	trs := train.Trajectories
	start := time.Now()
	data, err := l.prepare(train, true)
	if err != nil {
		return err
	}
	prepared := time.Now()
	r.Mismatch = mismatch(trs, data, l.s.RolloutBound)
	if r.WeightMean, err = l.correct(trs, data); err != nil {
		return err
	}
	kl, err := l.referenceKL(trs, data, r)
	if err != nil {
		return err
	}
	if l.s.Loss.KLMode != "reward" {
		kl = nil
	}
	if err := l.advantages(trs, kl); err != nil {
		return err
	}
	advantaged := time.Now()
	learned := l.filterOverlong(train, r)
	if r.Stats, err = l.epochs(learned, data, trainPolicy, false); err != nil {
		return err
	}
	r.Timing.Prepare, r.Timing.Advantages = prepared.Sub(start), advantaged.Sub(prepared)
	return nil
}

// updateOnPolicy is the update of one optimizer step whose training
// forward gives the old logprobs (oldFromStep): without them before the
// step there is no correction, no KL in the rewards, and the mismatch and
// the KL to the reference are measured after it.
func (l *Learner) updateOnPolicy(train Batch, r *UpdateResult) error {
	r.OldFromStep = true
	r.WeightMean = math.NaN() // no correction
	start := time.Now()
	data, err := l.prepare(train, false)
	if err != nil {
		return err
	}
	prepared := time.Now()
	if err := l.advantages(train.Trajectories, nil); err != nil {
		return err
	}
	advantaged := time.Now()
	learned := l.filterOverlong(train, r)
	if r.Stats, err = l.epochs(learned, data, true, true); err != nil {
		return err
	}
	r.Timing.Prepare, r.Timing.Advantages = prepared.Sub(start), advantaged.Sub(prepared)
	measured := time.Now()
	if err := l.gatherOld(learned.Trajectories, data); err != nil {
		return err
	}
	r.Mismatch = mismatch(learned.Trajectories, data, l.s.RolloutBound)
	if _, err := l.referenceKL(learned.Trajectories, data, r); err != nil {
		return err
	}
	r.Timing.Advantages += time.Since(measured)
	return nil
}

// prepare computes, without gradients, the data of b an update needs:
// with old, the policy's logprobs at the sampling temperature (setOld),
// the reference's when there is one, and the critic's values when there
// is one (also set as the trajectories' Values, which the estimators
// read). A packed batch's logprobs hold the tokens the losses read
// (lossTargets, 0 elsewhere), its values every token.
func (l *Learner) prepare(b Batch, old bool) (TokenTable, error) {
	c := l.s
	data := make(TokenTable, len(b.Trajectories))
	for _, t := range b.Trajectories {
		data[t] = &TokenData{}
	}
	want := lossTargets(c.LossMask)
	if old {
		rows, err := pass(l.dist, l.policy, b, c.MicroBatch, want, torch.ForwardOptions{Temperature: c.Temperature, Entropy: true}, c.RoutingReplay, pickLogprobs, pickEntropy)
		if err != nil {
			return nil, err
		}
		for i, t := range b.Trajectories {
			data.setOld(t, rows[i][0], rows[i][1])
		}
	}
	if l.ref != nil {
		rows, err := pass(l.dist, l.ref, b, c.MicroBatch, want, torch.ForwardOptions{Temperature: c.Temperature}, false, pickLogprobs)
		if err != nil {
			return nil, err
		}
		for i, t := range b.Trajectories {
			data[t].Ref = rows[i][0]
		}
	}
	if l.critic != nil {
		rows, err := pass(l.dist, l.critic, b, c.MicroBatch, allTargets, valuesOnly, false, pickValues)
		if err != nil {
			return nil, err
		}
		for i, t := range b.Trajectories {
			data[t].Values = rows[i][0]
			t.Values = rows[i][0]
		}
	}
	return data, nil
}

// setOld sets t's old logprobs (token j's at index j) and keeps them on
// the action tokens as t's TrainLogprobs, with the policy's entropies as
// its Entropies, for the store.
func (d TokenTable) setOld(t *trajectory.Trajectory, old, ent []float32) {
	d[t].Old = old
	t.TrainLogprobs, t.Entropies = onActions(t, old), onActions(t, ent)
}

// onActions is a copy of x holding its values on t's action tokens and 0
// elsewhere.
func onActions(t *trajectory.Trajectory, x []float32) []float32 {
	out := make([]float32, len(t.Tokens))
	for j, m := range t.Mask {
		if m == 1 && j < len(x) {
			out[j] = x[j]
		}
	}
	return out
}

// mismatch measures the rollout/training mismatch of the batch: the
// behaviour logprobs against the old ones, on the action tokens.
func mismatch(train []*trajectory.Trajectory, data TokenTable, bound float64) metric.Mismatch {
	behaviour, old, masks := make([][]float32, len(train)), make([][]float32, len(train)), make([][]uint8, len(train))
	for i, tr := range train {
		behaviour[i], old[i], masks[i] = tr.Logprobs, data[tr].Old, tr.Mask
	}
	return metric.MeasureMismatch(behaviour, old, masks, bound, algo.MaxLogRatio)
}

// correct sets each trajectory's rollout-correction weights (the
// settings' RolloutCorrection, none when "" or "off") and returns their
// mean over the action tokens (NaN without a correction).
func (l *Learner) correct(train []*trajectory.Trajectory, data TokenTable) (float64, error) {
	mode := l.s.RolloutCorrection
	if mode == "" || mode == "off" {
		return math.NaN(), nil
	}
	sum, n := 0.0, 0
	for _, tr := range train {
		w, err := algo.RolloutWeights(tr.Logprobs, data[tr].Old, tr.Mask, mode, l.s.RolloutBound)
		if err != nil {
			return 0, fmt.Errorf("trajectory %s: %w", tr.ID, err)
		}
		data[tr].Weight = w
		for j, m := range tr.Mask {
			if m == 1 {
				sum += float64(w[j])
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN(), nil
	}
	return sum / float64(n), nil
}

// referenceKL is the per-token KL of the old policy to the reference,
// loss.TokenKL on the policy's tokens and 0 elsewhere (nil without a
// reference); its mean over the policy's tokens goes to r. It is computed
// in f64 on the CPU.
func (l *Learner) referenceKL(train []*trajectory.Trajectory, data TokenTable, r *UpdateResult) ([][]float32, error) {
	if l.ref == nil || len(train) == 0 {
		return nil, nil
	}
	p := PadBatch(train)
	B, W := int64(len(train)), int64(p.Width())
	s := torch.NewScope()
	defer s.Close()
	grid := func(f func(t *trajectory.Trajectory, j int) float32) *torch.Tensor {
		return s.To(s.Float32(p.Grid(f), B, W), torch.CPU, torch.Float64)
	}
	old := grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Old[j] })
	ref := grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Ref[j] })
	k := loss.TokenKL(s, old, ref, l.s.Loss.KLEstimator)
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("kl to the reference: %w", err)
	}
	v, err := k.Float32s()
	if err != nil {
		return nil, err
	}
	var sum float64
	var n int
	kl := p.Unpack(v)
	for i, tr := range train {
		for j, mk := range tr.Mask {
			if mk != 1 {
				kl[i][j] = 0
				continue
			}
			sum += float64(kl[i][j])
			n++
		}
	}
	r.HasRef = true
	if n > 0 {
		r.KLRef = sum / float64(n)
	}
	return kl, nil
}

// advantages sets the trajectories' advantages and returns by the
// estimator the settings name, with the per-token KL penalty kl in the
// rewards (nil: none).
func (l *Learner) advantages(trs []*trajectory.Trajectory, kl [][]float32) error {
	est, err := algo.Get(l.s.Estimator)
	if err != nil {
		return err
	}
	return est.Advantages(trs, kl, l.s.Advantage)
}

// filterOverlong is DAPO's overlong filtering: the truncated episodes
// counted in their groups' advantages, and leave the batch the losses
// see.
func (l *Learner) filterOverlong(train Batch, r *UpdateResult) Batch {
	learned, masked := l.s.Overlong.FilterOverlong(train.Trajectories)
	r.Trained, r.OverlongMasked = learned, masked
	return train.of(learned)
}

// gatherOld hands every rank the old logprobs (and entropies) that each
// rank's training forwards set on its shard of the batch, so that after a
// step that took them (oldFromStep) every trajectory has them on every
// rank. It fails naming a trajectory that got none.
func (l *Learner) gatherOld(train []*trajectory.Trajectory, data TokenTable) error {
	type oldRows struct { // a trajectory's, by its index in train
		I        int
		Old, Ent []float32
	}
	if l.dist.World() > 1 {
		var mine []oldRows
		for i, t := range train {
			if data[t].Old != nil {
				mine = append(mine, oldRows{I: i, Old: data[t].Old, Ent: t.Entropies})
			}
		}
		parts, err := dist.Gather(l.dist, mine)
		if err != nil {
			return fmt.Errorf("gather the old logprobs: %w", err)
		}
		for _, rows := range parts {
			for _, r := range rows {
				t := train[r.I]
				data[t].Old = r.Old
				t.TrainLogprobs, t.Entropies = onActions(t, r.Old), r.Ent
			}
		}
	}
	for _, t := range train {
		if data[t].Old == nil {
			return fmt.Errorf("trajectory %s: the training step computed no old logprobs", t.ID)
		}
	}
	return nil
}

// epochs runs the epochs of shuffled mini-batches: per mini-batch one
// step of the policy (and a shared value head), or of the value head
// alone during the critic's warm-up, then one of a separate critic.
// fromStep: the policy step's training forward gives the old logprobs.
// The units of b are shuffled (a packed batch's episodes), and a
// mini-batch holds whole units, laid out in b's order: a mini-batch of
// the whole batch then runs the micro-batches of prepare's passes row for
// row (the same rows of the same matrices, so the recomputed old logprobs
// equal the step's bit for bit, whatever the BLAS), and the shuffle only
// chooses which units learn together.
func (l *Learner) epochs(b Batch, data TokenTable, trainPolicy, fromStep bool) (Stats, error) {
	var st Stats
	units := slices.Clone(b.units)
	for epoch := 0; epoch < l.s.Epochs; epoch++ {
		l.rand.Shuffle(len(units), func(a, b int) { units[a], units[b] = units[b], units[a] })
		for _, idx := range miniBatches(units, l.s.MiniBatch) {
			slices.Sort(idx)
			mini := b.of(Pick(b.Trajectories, idx))
			// The mini-batch's policy and critic steps share one point of
			// the schedule (the run's policy steps so far), its loss
			// normaliser and this rank's micro-batches of it (whole units:
			// dist.Shard).
			if err := l.setLR(&st); err != nil {
				return st, err
			}
			norm := l.norm(mini.Trajectories)
			mbs := microBatches(mini.shard(l.dist), l.s.MicroBatch, lossTargets(l.s.LossMask))
			if trainPolicy || l.mode == SharedCritic {
				if err := l.policyStep(mini.Trajectories, mbs, norm, data, trainPolicy, fromStep, &st); err != nil {
					return st, err
				}
			}
			if l.mode == SeparateCritic {
				if err := l.criticStep(mbs, norm, data, &st); err != nil {
					return st, err
				}
			}
		}
	}
	return st, l.finish(&st)
}

// setLR sets the learning rates of the next optimizer step, the one after
// the run's policy steps so far (Schedule.At): the policy's (group 0 of
// the policy optimizer), a shared value head's (its group 1) and a
// separate critic's.
func (l *Learner) setLR(st *Stats) error {
	step := l.steps + st.Steps
	lr, clr := l.s.Schedule.At(l.s.PolicyOptim.LR, step), l.s.Schedule.At(l.s.CriticOptim.LR, step)
	st.LR = lr
	if err := l.opt.SetLR(0, lr); err != nil {
		return err
	}
	if err := l.opt.SetLR(1, clr); err != nil {
		return err
	}
	if l.criticOpt != nil {
		return l.criticOpt.SetLR(0, clr)
	}
	return nil
}

// norm is the mini-batch's loss normaliser.
func (l *Learner) norm(mini []*trajectory.Trajectory) algo.Norm {
	n := Norm(mini, l.s.LossMask)
	n.Horizon = float64(l.s.Horizon)
	return n
}

// policyStep is one optimizer step of the policy (and a shared critic) on
// a mini-batch: the gradients of this rank's micro-batches of it
// accumulate; then the step is taken, or skipped when a loss or the
// gradient norm is not finite.
// Without trainPolicy (the critic's warm-up) only the shared value head's
// loss counts. With fromStep the training forwards give the old logprobs,
// set on data with their entropies.
func (l *Learner) policyStep(mini []*trajectory.Trajectory, mbs []Padded, norm algo.Norm, data TokenTable, trainPolicy, fromStep bool, st *Stats) error {
	st.PolicySteps++
	nonFinite := false
	for _, p := range mbs {
		v, err := l.policyMicroBatch(p, data, norm, trainPolicy, fromStep, st)
		if err != nil {
			return err
		}
		nonFinite = nonFinite || !finite(v)
	}
	taken, gradNorm, err := optimizerStep("policy", l.opt, l.dist, l.s.MaxGradNorm, nonFinite, &st.Timing)
	if err != nil {
		return err
	}
	if !taken {
		st.Skipped++
		for _, t := range mini {
			st.SkippedIDs = append(st.SkippedIDs, t.ID)
		}
		return nil
	}
	st.GradNorm += gradNorm
	st.Steps++
	if l.mode == SharedCritic {
		st.CriticSteps++
		st.CriticGradNorm += gradNorm
	}
	return nil
}

// policyMicroBatch builds one micro-batch's policy loss in a scope of
// its own, back-propagates it and reads it back with its figures, which
// it adds to st (with fromStep, the forward's old logprobs go to data).
// It returns the loss.
func (l *Learner) policyMicroBatch(p Padded, data TokenTable, n algo.Norm, trainPolicy, fromStep bool, st *Stats) (float64, error) {
	s := torch.NewScopeOn(l.policy.Device)
	defer s.Close()
	start := time.Now()
	terms, err := l.policyLoss(s, p, data, n, trainPolicy, fromStep)
	if err != nil {
		return 0, err
	}
	forwarded := time.Now()
	if err := backward(s, "policy", p, terms.total, l.opt); err != nil {
		return 0, err
	}
	v, rows, err := readBack(s, []*torch.Tensor{terms.total, terms.policy, terms.clipLow, terms.clipHigh, terms.kl,
		terms.approxKL, terms.entropy, terms.tokens, terms.value, terms.routerAux}, terms.forward)
	if err != nil {
		return 0, fmt.Errorf("policy loss: %w", err)
	}
	st.Timing.Forward += forwarded.Sub(start)
	st.Timing.Backward += time.Since(forwarded)
	st.PolicyLoss, st.ClipFracLow, st.ClipFracHigh = st.PolicyLoss+v[1], st.ClipFracLow+v[2], st.ClipFracHigh+v[3]
	st.KLLoss, st.ApproxKL, st.Entropy = st.KLLoss+v[4], st.ApproxKL+v[5], st.Entropy+v[6]
	st.Tokens, st.ValueLoss = st.Tokens+int(v[7]), st.ValueLoss+v[8]
	if terms.routerAux != nil {
		st.RouterAuxLoss, st.RouterAux = st.RouterAuxLoss+v[9], true
	}
	st.UpdateTokens += p.Tokens()
	st.SampleTokens += tokens(p.Trs)
	if fromStep {
		lp, ent := p.Unpack(rows[:len(rows)/2]), p.Unpack(rows[len(rows)/2:])
		for i, t := range p.Trs {
			data.setOld(t, lp[i], ent[i])
		}
	}
	return v[0], nil
}

// policyTerms are a micro-batch's policy loss (total, what is back-
// propagated), its terms and diagnostics as scalars (nil: not computed),
// and with the old logprobs from the step the training forward's
// logprobs and entropies, stacked.
type policyTerms struct {
	total, policy, clipLow, clipHigh, kl, approxKL, entropy, tokens, value *torch.Tensor
	routerAux                                                              *torch.Tensor // its weighted share of the step's, nil unless asked
	forward                                                                *torch.Tensor
}

// policyLoss is one micro-batch's loss of the policy: the policy loss
// algorithm.policy_loss names, the KL-to-reference term and the entropy
// bonus when they are on, a shared value head's weighted value loss,
// normalised by the whole mini-batch's n, and, for a policy with
// mixture-of-experts layers whose config sets output_router_logits, the
// routers' load-balancing loss times router_aux_loss_coef, as
// transformers' CausalLM adds it to its loss: once per mini-batch, each
// micro-batch's weighted by its share of the mini-batch's sequences.
func (l *Learner) policyLoss(s *torch.Scope, p Padded, data TokenTable, n algo.Norm, trainPolicy, fromStep bool) (policyTerms, error) {
	c := l.s
	shared := l.mode == SharedCritic
	B, W := int64(len(p.Trs)), int64(p.Width())
	grid := func(f func(t *trajectory.Trajectory, j int) float32) *torch.Tensor { return s.Float32(p.Grid(f), B, W) }
	// A packed forward's logprobs off its targets are the old ones: the
	// ratio there is 1 (forward).
	var old *torch.Tensor
	if trainPolicy && !fromStep {
		old = grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Old[j] })
	}
	// The entropy's graph is built only when the entropy bonus weighs in.
	moe := l.policy.Config.MoE
	aux := trainPolicy && moe.OutputRouterLogits && l.policy.Config.Sparse()
	o, err := forward(s, l.policy, p, torch.ForwardOptions{Temperature: c.Temperature, Grad: true, Entropy: true,
		EntropyGrad: trainPolicy && c.Loss.EntropyCoef != 0, Values: shared, RouterAuxLoss: aux}, torch.Output{LogProbs: old}, c.RoutingReplay)
	if err != nil {
		return policyTerms{}, OOMHint(fmt.Errorf("policy forward of %d trajectories (%d tokens): %w", len(p.Trs), p.Tokens(), err))
	}
	mask := grid(func(t *trajectory.Trajectory, j int) float32 { return LossMask(t, j, c.LossMask) })
	var out policyTerms
	out.total = s.Scalar(0)
	if trainPolicy {
		if fromStep {
			old = s.Detach(o.LogProbs)
			out.forward = s.Stack(0, old, s.Detach(o.Entropy))
		}
		adv := grid(func(t *trajectory.Trajectory, j int) float32 { return t.Advantages[j] })
		pin := loss.PolicyInputs{LogP: o.LogProbs, OldLogP: old, Adv: adv, Mask: mask}
		if data[p.Trs[0]].Weight != nil {
			pin.Weight = grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Weight[j] })
		}
		pg, err := loss.PolicyLoss(s, pin, c.Loss, n)
		if err != nil {
			return policyTerms{}, err
		}
		out.total = s.Add(out.total, pg.Loss)
		out.policy, out.clipLow, out.clipHigh = pg.Loss, pg.ClipLow, pg.ClipHigh
		if c.Loss.KLMode == "loss" && c.Advantage.KLCoef != 0 && l.ref != nil {
			ref := grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Ref[j] })
			out.kl = loss.KLLoss(s, o.LogProbs, ref, mask, c.Loss.KLEstimator, c.Loss.LossAgg, n)
			out.total = s.Add(out.total, s.MulScalar(out.kl, c.Advantage.KLCoef))
		}
		if c.Loss.EntropyCoef != 0 {
			ent := loss.Aggregate(s, o.Entropy, mask, c.Loss.LossAgg, n)
			out.total = s.Sub(out.total, s.MulScalar(ent, c.Loss.EntropyCoef))
		}
		d := loss.Diagnose(s, o.LogProbs, old, o.Entropy, mask)
		out.approxKL, out.entropy, out.tokens = d.ApproxKL, d.Entropy, d.Tokens
		if aux {
			out.routerAux = s.MulScalar(o.AuxLoss, float64(len(p.Trs))/n.Sequences)
			out.total = s.Add(out.total, s.MulScalar(out.routerAux, moe.RouterAuxLossCoef))
		}
	}
	if shared {
		out.value = l.valueLoss(s, p, o.Values, mask, data, n)
		out.total = s.Add(out.total, s.MulScalar(out.value, c.Loss.VFCoef))
	}
	return out, nil
}

// criticStep is one optimizer step of a separate critic on a mini-batch's
// micro-batches, policyStep's.
func (l *Learner) criticStep(mbs []Padded, norm algo.Norm, data TokenTable, st *Stats) error {
	sum, nonFinite := 0.0, false
	for _, p := range mbs {
		v, err := l.criticMicroBatch(p, data, norm, &st.Timing)
		if err != nil {
			return err
		}
		sum += v
		nonFinite = nonFinite || !finite(v)
	}
	taken, gradNorm, err := optimizerStep("critic", l.criticOpt, l.dist, l.s.MaxGradNorm, nonFinite, &st.Timing)
	if err != nil {
		return err
	}
	if !taken {
		st.Skipped++
		return nil
	}
	st.ValueLoss += sum
	st.CriticGradNorm += gradNorm
	st.CriticSteps++
	return nil
}

// criticMicroBatch builds one micro-batch's value loss of a separate
// critic in a scope of its own, back-propagates it and returns it.
func (l *Learner) criticMicroBatch(p Padded, data TokenTable, n algo.Norm, tm *Timing) (float64, error) {
	s := torch.NewScopeOn(l.critic.Device)
	defer s.Close()
	start := time.Now()
	vl, err := l.criticLoss(s, p, data, n)
	if err != nil {
		return 0, err
	}
	forwarded := time.Now()
	if err := backward(s, "critic", p, vl, l.criticOpt); err != nil {
		return 0, err
	}
	v, _, err := readBack(s, []*torch.Tensor{vl}, nil)
	if err != nil {
		return 0, fmt.Errorf("critic loss: %w", err)
	}
	tm.Forward += forwarded.Sub(start)
	tm.Backward += time.Since(forwarded)
	return v[0], nil
}

// criticLoss is one micro-batch's value loss of a separate critic.
func (l *Learner) criticLoss(s *torch.Scope, p Padded, data TokenTable, n algo.Norm) (*torch.Tensor, error) {
	// Only the value head's output: no logits over the vocabulary.
	o, err := forward(s, l.critic, p, torch.ForwardOptions{Grad: true, Values: true, ValuesOnly: true}, torch.Output{}, false)
	if err != nil {
		return nil, OOMHint(fmt.Errorf("critic forward of %d trajectories: %w", len(p.Trs), err))
	}
	maskV := p.Grid(func(t *trajectory.Trajectory, j int) float32 { return LossMask(t, j, l.s.LossMask) })
	return l.valueLoss(s, p, o.Values, s.Float32(maskV, int64(len(p.Trs)), int64(p.Width())), data, n), nil
}

// valueLoss is PPO2's clipped value loss of a micro-batch against the
// returns, clipped around the values before the update.
func (l *Learner) valueLoss(s *torch.Scope, p Padded, values, mask *torch.Tensor, data TokenTable, n algo.Norm) *torch.Tensor {
	B, W := int64(len(p.Trs)), int64(p.Width())
	oldV := p.Grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Values[j] })
	retV := p.Grid(func(t *trajectory.Trajectory, j int) float32 { return t.Returns[j] })
	return loss.ValueLoss(s, values, s.Float32(oldV, B, W), s.Float32(retV, B, W), mask, l.s.Loss.ValueClip, l.s.Loss.LossAgg, n)
}

// backward back-propagates a micro-batch's loss, accumulating its
// gradients (into the optimizer's f32 accumulators for bf16/f16
// parameters). A non-finite loss is back-propagated all the same, so that
// the step never waits on the device for the loss's value; the ranks then
// agree to drop the step's gradients (optimizerStep).
func backward(s *torch.Scope, name string, p Padded, loss *torch.Tensor, opt *torch.AdamW) error {
	if err := s.Err(); err != nil {
		return fmt.Errorf("%s loss: %w", name, err)
	}
	if err := loss.Backward(); err != nil {
		return OOMHint(fmt.Errorf("%s backward of %d trajectories (%d tokens): %w", name, len(p.Trs), p.Tokens(), err))
	}
	return opt.Accumulate()
}

// readBack copies a micro-batch's scalars (nil reads as 0) and, when
// given, one grid back in one transfer, after the backward pass: on a GPU
// that is one synchronisation per micro-batch, not one per figure.
func readBack(s *torch.Scope, scalars []*torch.Tensor, grid *torch.Tensor) ([]float64, []float32, error) {
	var parts []*torch.Tensor
	for _, t := range append(scalars, grid) {
		if t != nil {
			parts = append(parts, s.To(s.Detach(s.Reshape(t, -1)), s.Device(), torch.Float32))
		}
	}
	flat := s.Cat(0, parts...)
	if err := s.Err(); err != nil {
		return nil, nil, err
	}
	vals, err := flat.Float32s()
	if err != nil {
		return nil, nil, err
	}
	out := make([]float64, len(scalars))
	at := 0
	for i, t := range scalars {
		if t != nil {
			out[i] = float64(vals[at])
			at++
		}
	}
	if grid == nil {
		return out, nil, nil
	}
	return out, vals[at:], nil
}

// optimizerStep ends an optimizer step of opt whose micro-batches have
// accumulated their gradients: it sums them over the ranks (whole, or
// with ZeRO stage 2 each rank its range: the optimizer holds the group),
// lets the ranks agree whether any saw a non-finite loss, clips the
// gradient norm (returned, the same on every rank) and takes the step,
// or drops the gradients (taken false) when a loss or the norm is not
// finite. Its time goes to tm.Optim.
func optimizerStep(name string, opt *torch.AdamW, g *dist.Group, maxGradNorm float64, nonFinite bool, tm *Timing) (taken bool, gradNorm float64, err error) {
	start := time.Now()
	defer func() { tm.Optim += time.Since(start) }()
	if err := opt.ReduceGrads(); err != nil {
		return false, 0, fmt.Errorf("%s gradient reduction over the ranks: %w", name, err)
	}
	if nonFinite, err = g.Any(nonFinite); err != nil {
		return false, 0, err
	}
	if gradNorm, err = opt.ClipGradNorm(maxGradNorm); err != nil {
		return false, 0, err
	}
	if nonFinite || !finite(gradNorm) {
		return false, gradNorm, opt.ZeroGrad()
	}
	if err := opt.Step(); err != nil {
		return false, gradNorm, err
	}
	return true, gradNorm, opt.ZeroGrad()
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
