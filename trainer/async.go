package trainer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// Asynchronous training (rollout.max_staleness = k > 0) runs two roles in
// one process over one store. The rollout role (produce, on a goroutine
// of its own locked to an OS thread) samples the training episodes of the
// next iterations with the sampler's copy of the policy weights; the
// learning role (the loop) takes each iteration's batch in order, checks
// its staleness, updates the policy and publishes the new weights, which
// the copy takes between two decode steps: an episode in flight goes on
// with them (a partial rollout), each of its turns keeping the version
// that sampled its first token. The rollout role starts the batch of
// iteration j only once the update of iteration j-k-1 is published, so
// the update of j, which starts from the weights of j-1, is at most k
// versions ahead of any turn it learns from.
//
// In a data-parallel job every rank runs both roles. Each rank's rollout
// role samples its own share of each batch (the same prompts on every
// rank, drawn from the same data position) and runs no collective; the
// learning role gathers the shares when it takes the batch, at the same
// point of its loop on every rank, so the collectives of the gather, the
// update (its all-reduces), the evaluation and the checkpoint keep one
// order on one goroutine. The version bound holds on every rank alike:
// each rank publishes the same version after the same update (the ranks
// apply the same summed gradients), and the staleness check runs on the
// gathered batch, which every rank holds whole.

// pipeline is the running rollout role and what the learning role shares
// with it: asynchronous training's source of batches.
type pipeline struct {
	t       *Trainer
	k       int
	weights *agent.SwapDecoder
	runMu   sync.Mutex // one rollout at a time on the sampler (training draws, evaluations)
	out     chan batch // closed when the rollout role ends
	cancel  context.CancelFunc

	mu      sync.Mutex
	updated int           // the last iteration whose update is published
	changed chan struct{} // closed when updated moves

	// versions are the distinct policy versions the rollout role has
	// decoded with, ascending (the learning role's alone).
	versions []int
}

// startPipeline starts the rollout role for the iterations after the run
// state's, from its data position and with the policy's current weights.
func (t *Trainer) startPipeline(ctx context.Context) (*pipeline, error) {
	v := t.state.OptSteps
	w, err := agent.NewSwapDecoder(t.sampler, v)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &pipeline{t: t, k: t.cfg.Rollout.MaxStaleness, weights: w, out: make(chan batch, t.cfg.Rollout.MaxStaleness+1),
		cancel: cancel, updated: t.state.Iteration, changed: make(chan struct{}), versions: []int{v}}
	threads := torch.Threads()
	go p.produce(ctx, t.state.Iteration+1, t.state.dataPos.clone(), threads)
	return p, nil
}

// stop cancels the rollout role, waits for it to end and drops the batches
// it sampled ahead: a checkpoint's data position counts only the prompts of
// the iterations updated, so a resumed run draws the others again.
func (p *pipeline) stop() {
	p.cancel()
	for range p.out {
	}
}

// produce is the rollout role: it samples the batches of iterations first
// to run.iterations in order, each once rollout.MayStart allows it, from its own
// data position pos (each pass shuffled by a generator of its own, seeded
// by the run's seed and the pass, so the prompts do not depend on the
// timing of the two roles).
func (p *pipeline) produce(ctx context.Context, first int, pos dataPos, threads int) {
	t := p.t
	defer close(p.out)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := torch.SetThreads(threads); err != nil {
		p.out <- batch{iter: first, err: err}
		return
	}
	src := taskSource{pos: &pos, perm: func(pass, n int) []int {
		return rand.New(rand.NewPCG(uint64(t.cfg.Run.Seed), 0xda7a0000+uint64(pass))).Perm(n)
	}, share: t.dist.World() > 1}
	for j := first; j <= t.cfg.Run.Iterations; j++ {
		if !p.wait(ctx, j) {
			return
		}
		trs, rs, drawn, err := t.trainingEpisodes(ctx, j, src)
		if ctx.Err() != nil {
			return
		}
		p.out <- batch{iter: j, trs: trs, rs: rs, drawn: drawn, pos: pos.clone(), err: err}
		if err != nil {
			return
		}
	}
}

// wait blocks until the batch of iteration j may start (true) or ctx ends
// (false).
func (p *pipeline) wait(ctx context.Context, j int) bool {
	for {
		p.mu.Lock()
		u, ch := p.updated, p.changed
		p.mu.Unlock()
		if rollout.MayStart(j, u, p.k) {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// next is the batch of iteration iter, waiting for the rollout role; in a
// data-parallel job the ranks gather their shares of it here. The run
// state's data position moves to the batch's, and the version lag of its
// trainable turns is checked against the bound k and measured.
func (p *pipeline) next(_ context.Context, iter int) (batch, error) {
	t := p.t
	b, ok := <-p.out
	switch {
	case !ok:
		return b, fmt.Errorf("the rollout role ended before iteration %d's episodes", iter)
	case b.err != nil:
		return b, b.err
	case b.iter != iter:
		return b, fmt.Errorf("the rollout role handed over iteration %d's episodes for iteration %d", b.iter, iter)
	}
	var err error
	if t.dist.World() > 1 {
		if b.trs, b.rs, err = t.gather(fmt.Sprintf("iter %d rollout", iter), b.trs, b.rs, false); err != nil {
			return b, err
		}
	}
	t.state.dataPos = b.pos
	train := trainable(b.trs)
	mean, largest, err := rollout.Staleness(train, p.versions, t.state.OptSteps, p.k)
	if err != nil {
		return b, err
	}
	b.figures = []figure{{metric.StalenessMean, mean}, {metric.StalenessMax, largest}}
	return b, nil
}

// ready: published has already swapped the new weights in, between two
// decode steps.
func (p *pipeline) ready() error { return nil }

// decoder is the sampler over its copy of the weights, one rollout at a
// time (training draws, evaluations), its weights swapped between steps.
func (p *pipeline) decoder() (decoding.LogitsDecoder, func()) {
	p.runMu.Lock()
	return p.weights, p.runMu.Unlock
}

// stamp: the episodes record the version of the weights in the copy, each
// turn the one its first token was sampled with.
func (p *pipeline) stamp(o *rollout.Options) {
	o.PolicyVersion, o.Version = p.weights.Current(), p.weights.LastUsed
}

// published hands the weights of the policy after iteration iter's update
// (version v) to the rollout role and lets it start the batches the bound
// now allows.
func (p *pipeline) published(iter, v int) error {
	if err := p.weights.Swap(v); err != nil {
		return err
	}
	if last := p.versions[len(p.versions)-1]; v != last {
		p.versions = append(p.versions, v)
	}
	p.mu.Lock()
	p.updated = iter
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	return nil
}
