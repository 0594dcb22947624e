package rollout

import (
	"fmt"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trajectory"
)

// Request asks for Samples trajectories of one task; they form group Group
// and share the prompt's prefill. With Prefix they continue an episode of
// the task instead of starting from its prompt.
type Request struct {
	Task    envs.Task
	Group   int
	Samples int
	Prefix  *Prefix
}

// Options are the limits and sampling settings of a rollout.
type Options struct {
	Sampling       decoding.Sampling
	MaxTurnTokens  int // tokens the policy may generate in one turn
	MaxTotalTokens int // budget of a whole trajectory, prompt included
	Seed           uint64
	Iteration      int
	PolicyVersion  int
	// Version, when set, is called after each decode step and returns the
	// policy version of the weights that step sampled with (asynchronous
	// training swaps them between steps): each turn then records the
	// version that sampled its first token, and each trajectory its first
	// turn's (the oldest of its tokens'). Nil: PolicyVersion throughout.
	Version func() int
	Split   trajectory.Split
	// Deterministic waits for every tool call of a step before decoding
	// on, so the decode batches, and hence the sampled tokens, depend only
	// on the seeds (reproducible runs and resumes) at the cost of
	// overlapping tool latency with decoding.
	Deterministic bool
	// OnDone is called (on the scheduler's goroutine) as each trajectory
	// finishes, e.g. to advance a progress bar.
	OnDone func(*trajectory.Trajectory)
	// RecordRouting keeps on each trajectory the experts its tokens took
	// at the policy's mixture-of-experts layers (Trajectory.Routing, for
	// routing replay): the decoder must be a decoding.RoutingDecoder that
	// records.
	RecordRouting bool
}

func (o Options) validate(d decoding.Decoder, reqs []Request) error {
	if o.MaxTurnTokens < 1 {
		return fmt.Errorf("rollout: max_turn_tokens is %d, want at least 1", o.MaxTurnTokens)
	}
	if o.MaxTotalTokens < 2 {
		return fmt.Errorf("rollout: max_tokens is %d, want at least 2", o.MaxTotalTokens)
	}
	if _, ok := d.(decoding.RoutingDecoder); o.RecordRouting && !ok {
		return fmt.Errorf("rollout: routing replay (algorithm.routing_replay) needs a decoder that records the experts of each token; %T does not", d)
	}
	if o.MaxTotalTokens > d.MaxLen() {
		return fmt.Errorf("rollout: max_tokens %d exceeds the KV cache length %d", o.MaxTotalTokens, d.MaxLen())
	}
	for _, r := range reqs {
		if r.Samples < 1 || r.Samples > d.Slots() {
			return fmt.Errorf("rollout: task %s asks for %d samples; want 1..%d (the number of slots)", r.Task.ID, r.Samples, d.Slots())
		}
	}
	return nil
}

// Stats describe where a rollout's time went.
type Stats struct {
	Wall          time.Duration
	Decode        time.Duration // in decode steps
	Prefill       time.Duration // prefilling prompts and observations
	Idle          time.Duration // waiting for tools with no slot able to run
	Steps         int           // decode calls
	Generated     int           // tokens sampled
	Prefilled     int           // tokens prefilled (prompts once per group, observations)
	MeanBatch     float64       // mean number of slots per decode call
	Trajectories  int
	ToolLatencyMS float64 // summed tool wall time
}

// Merge combines the stats of rollouts that ran side by side (data-parallel
// ranks): times are the longest, counts add up, and the mean decode batch
// is weighted by decode calls.
func (s Stats) Merge(o Stats) Stats {
	if s.Steps+o.Steps > 0 {
		s.MeanBatch = (s.MeanBatch*float64(s.Steps) + o.MeanBatch*float64(o.Steps)) / float64(s.Steps+o.Steps)
	}
	s.Wall, s.Decode, s.Prefill, s.Idle = max(s.Wall, o.Wall), max(s.Decode, o.Decode), max(s.Prefill, o.Prefill), max(s.Idle, o.Idle)
	s.Steps += o.Steps
	s.Generated += o.Generated
	s.Prefilled += o.Prefilled
	s.Trajectories += o.Trajectories
	s.ToolLatencyMS += o.ToolLatencyMS
	return s
}

// Then combines the stats of rollouts that ran one after the other (the
// draws of dynamic sampling): times and counts add up, and the mean
// decode batch is weighted by decode calls.
func (s Stats) Then(o Stats) Stats {
	m := s.Merge(o)
	m.Wall, m.Decode, m.Prefill, m.Idle = s.Wall+o.Wall, s.Decode+o.Decode, s.Prefill+o.Prefill, s.Idle+o.Idle
	return m
}

// Timing is what the rollout measures, as the iteration records it.
func (s Stats) Timing() metric.Rollout {
	return metric.Rollout{Generated: s.Generated, Wall: s.Wall, Decode: s.Decode, Prefill: s.Prefill, ToolWait: s.Idle, DecodeBatchMean: s.MeanBatch}
}

// trajSeed derives a slot's sampling seed from the run seed and the
// trajectory's coordinates (splitmix64 mixing), so every trajectory has its
// own reproducible stream.
func trajSeed(seed uint64, iter, group, sample int, split trajectory.Split) uint64 {
	x := seed ^ uint64(iter)<<40 ^ uint64(group)<<20 ^ uint64(sample)
	if split == trajectory.Eval {
		x ^= 0x9e3779b97f4a7c15
	}
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
