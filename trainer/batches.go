package trainer

import (
	"context"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// batches is where the loop's training batches come from, and the decoder
// every rollout of the run (training draws and evaluations) samples with.
// Run picks one when the loop starts: the synchronous loop's (lockstep),
// or with rollout.max_staleness > 0 the rollout role of asynchronous
// training (pipeline, async.go), which samples ahead while the loop
// learns. The loop reads the same with either.
type batches interface {
	// next is iteration iter's batch, whole on every rank.
	next(ctx context.Context, iter int) (batch, error)
	// ready brings the decoder's weights up to the policy's before a
	// rollout the loop runs itself (an evaluation).
	ready() error
	// decoder is the decoder a rollout samples with, held by that rollout
	// until it calls release.
	decoder() (dec decoding.LogitsDecoder, release func())
	// stamp sets the policy version a rollout's episodes record
	// (o.PolicyVersion) and, where turns may be sampled by different
	// versions, where each turn reads its own (o.Version).
	stamp(o *rollout.Options)
	// published says that the policy after iteration iter's update is
	// version v.
	published(iter, v int) error
	// stop ends the source; the loop then takes no more batches from it.
	stop()
}

// batch is one iteration's training episodes, with their rollout stats and
// draws, the data position after its draws, and the figures its source
// measured on it (asynchronous training: the version lag of its turns).
type batch struct {
	iter    int
	trs     []*trajectory.Trajectory
	rs      rollout.Stats
	drawn   algo.Drawn
	pos     dataPos
	figures []figure
	err     error
}

// figure is a named value a batch's source measured on it, recorded and
// logged with the iteration's metrics.
type figure struct {
	name  string
	value float64
}

// trainable returns the trajectories of trs the update learns from: kept
// by the group filter, finished without failing or being cancelled, with
// at least one action token.
func trainable(trs []*trajectory.Trajectory) []*trajectory.Trajectory {
	var out []*trajectory.Trajectory
	for _, tr := range trs {
		if tr.Dropped == "" && !tr.Stop.Failed() && tr.Stop != trajectory.StopCancelled && tr.ActionTokens() > 0 {
			out = append(out, tr)
		}
	}
	return out
}

// lockstep is the synchronous loop's source: each batch is sampled when
// the loop asks for it, by the policy as it is (the sampler's copy of the
// weights brought up to the policy's first), from the run state's data
// position, each pass shuffled by the run's generator.
type lockstep struct{ t *Trainer }

func (s lockstep) next(ctx context.Context, iter int) (batch, error) {
	if err := s.ready(); err != nil {
		return batch{}, err
	}
	trs, rs, drawn, err := s.t.trainingEpisodes(ctx, iter, taskSource{pos: &s.t.state.dataPos, perm: func(_, n int) []int { return s.t.rng.Perm(n) }})
	return batch{iter: iter, trs: trs, rs: rs, drawn: drawn}, err
}

func (s lockstep) ready() error { return s.t.sampler.Sync() }

func (s lockstep) decoder() (decoding.LogitsDecoder, func()) {
	return s.t.sampler.Decoder(), func() {}
}

// stamp: every turn of an episode is sampled by the policy it started with
// (o.Version stays nil).
func (s lockstep) stamp(o *rollout.Options) { o.PolicyVersion = s.t.state.OptSteps }

// published: the next batch's ready takes the new weights.
func (lockstep) published(int, int) error { return nil }

func (lockstep) stop() {}

// endBatches stops the loop's source and goes back to the synchronous one,
// which the rollouts outside the loop (the warm start's, iteration zero's
// evaluation) sample with.
func (t *Trainer) endBatches() {
	t.batches.stop()
	t.batches = lockstep{t}
}
