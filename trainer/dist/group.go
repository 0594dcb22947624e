package dist

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
)

// Options shape a rank's group.
type Options struct {
	Backend string        // "auto" (gloo on the CPU, nccl on CUDA), "gloo" or "nccl"
	Device  torch.Device  // the rank's device
	Timeout time.Duration // rendezvous and heartbeats give up after it
	// CollectiveTimeout bounds one collective: long enough for the others
	// to wait while rank 0 writes a checkpoint (dead ranks are found
	// sooner, by their closed connections and the heartbeat).
	CollectiveTimeout time.Duration
	BucketMB          float64 // gradient all-reduce bucket size
	Log               zerolog.Logger
	// OnLost is called once when the heartbeat finds a rank gone; the
	// default logs the error and exits the process with status 1.
	OnLost func(error)
}

// Group is this process's membership of a data-parallel job. A nil
// *Group is a job of one process.
type Group struct {
	env     Env
	g       *torch.Group
	store   *torch.KVStore
	watch   *watchdog
	bucket  int64
	timeout time.Duration
	log     zerolog.Logger
}

// Join meets the other ranks at the TCPStore that rank 0 serves at
// MASTER_ADDR:MASTER_PORT, builds the process group, and starts the
// heartbeat. It fails (never hangs) when the ranks have not all arrived
// within o.Timeout. Call it, and every collective, on the device worker's
// goroutine.
func Join(env Env, o Options) (*Group, error) {
	b, err := backend(o.Backend, o.Device)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("dist.timeout must be positive")
	}
	if o.CollectiveTimeout <= 0 {
		o.CollectiveTimeout = o.Timeout
	}
	if err := torch.SetDevice(o.Device); err != nil {
		return nil, err
	}
	if b == torch.NCCL {
		// Without these NCCL's watchdog does not enforce the collective
		// timeout: a hung peer would block the others for ever (the
		// first name is libtorch 1.x's, the second 2.x's).
		for _, k := range []string{"NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING"} {
			if os.Getenv(k) == "" {
				os.Setenv(k, "1")
			}
		}
	}
	start := time.Now()
	// Rank 0 serves the store, unless the launcher already does (torchrun's
	// agent store): then every rank is a client, and the process group's
	// own rendezvous waits for the others.
	server, waitFor := env.Rank == 0, env.World
	if env.AgentStore {
		server, waitFor = false, 0
	}
	s, err := torch.NewKVStore(env.MasterAddr, env.MasterPort, server, waitFor, o.Timeout, env.storePrefix())
	if err != nil {
		return nil, fmt.Errorf("rank %d: rendezvous at %s:%d with %d ranks (dist.timeout %s): %w", env.Rank, env.MasterAddr, env.MasterPort, env.World, o.Timeout, err)
	}
	var nw torch.Network
	switch {
	case os.Getenv("GLOO_SOCKET_IFNAME") != "":
		nw.Interface = os.Getenv("GLOO_SOCKET_IFNAME")
	case env.loopback():
		nw.Host = "127.0.0.1"
	}
	g, err := torch.NewGroup(s, b, env.Rank, env.World, o.Device, nw, o.CollectiveTimeout)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("rank %d: %w", env.Rank, err)
	}
	grp := &Group{env: env, g: g, store: s, bucket: int64(o.BucketMB * (1 << 20)), timeout: o.Timeout, log: o.Log}
	if grp.bucket <= 0 {
		grp.bucket = 25 << 20
	}
	onLost := o.OnLost
	if onLost == nil {
		onLost = func(err error) {
			o.Log.Error().Err(err).Int("rank", env.Rank).Msg("stopping: the job has lost a rank; resume the run from its last checkpoint with --resume")
			os.Exit(1)
		}
	}
	if grp.watch, err = startWatchdog(env, o.Timeout, onLost); err != nil {
		grp.g.Close()
		s.Close()
		return nil, err
	}
	o.Log.Info().Int("rank", env.Rank).Int("world", env.World).Str("backend", b.String()).
		Str("store", fmt.Sprintf("%s:%d", env.MasterAddr, env.MasterPort)).Dur("took", time.Since(start)).Msg("joined the data-parallel group")
	return grp, nil
}

func backend(name string, dev torch.Device) (torch.Backend, error) {
	switch name {
	case "", "auto":
		if dev.CUDA {
			return torch.NCCL, nil
		}
		return torch.Gloo, nil
	case "gloo":
		return torch.Gloo, nil
	case "nccl":
		if !dev.CUDA {
			return 0, fmt.Errorf("dist.backend nccl needs a CUDA device (device.device is %s): use gloo on the CPU", dev)
		}
		return torch.NCCL, nil
	}
	return 0, fmt.Errorf("dist.backend %q: want auto, gloo or nccl", name)
}

// Close leaves the job: it stops the heartbeat, waits at a barrier so no
// rank tears the store down under another, and releases the group.
func (g *Group) Close() error {
	if g == nil || g.g == nil {
		return nil
	}
	g.watch.stop()
	err := g.wrap("barrier at exit", g.g.Barrier())
	g.g.Close()
	g.store.Close()
	g.g = nil
	return err
}

// Rank is this process's rank (0 for a single process).
func (g *Group) Rank() int {
	if g == nil {
		return 0
	}
	return g.env.Rank
}

// World is the number of ranks (1 for a single process).
func (g *Group) World() int {
	if g == nil {
		return 1
	}
	return g.env.World
}

// Leader reports whether this is rank 0, which owns the store, logs,
// checkpoints and reports.
func (g *Group) Leader() bool { return g.Rank() == 0 }

// wrap names the collective that failed and what usually causes it.
func (g *Group) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("rank %d of %d: %s failed (another rank probably stopped: see its log): %w", g.env.Rank, g.env.World, what, err)
}

// Shard returns the elements of xs this rank handles: those at indices
// i with i mod World == Rank.
func Shard[T any](g *Group, xs []T) []T {
	if g.World() == 1 {
		return xs
	}
	var out []T
	for i := g.Rank(); i < len(xs); i += g.World() {
		out = append(out, xs[i])
	}
	return out
}

// ShardOptimizer hands o the group, so that o.ReduceGrads sums its
// gradients over the ranks (bucketed), with zero (dist.zero) saying how its
// state is held: 0 whole on every rank, 1 and 2 sharded (ZeRO), 2 with the
// gradients reduce-scattered too. In a single process it does nothing: one
// shard is plain AdamW.
func (g *Group) ShardOptimizer(o *torch.AdamW, zero int) error {
	if g.World() == 1 {
		return nil
	}
	return o.Shard(g.g, zero, g.bucket)
}

// Sum adds vals over the ranks, in place.
func (g *Group) Sum(vals []float64) error {
	if g.World() == 1 {
		return nil
	}
	return g.wrap("all-reduce", g.g.AllReduce(vals, torch.Sum))
}

// Any reports whether flag is set on any rank.
func (g *Group) Any(flag bool) (bool, error) {
	if g.World() == 1 {
		return flag, nil
	}
	v := []float64{0}
	if flag {
		v[0] = 1
	}
	if err := g.g.AllReduce(v, torch.Max); err != nil {
		return false, g.wrap("all-reduce of a flag", err)
	}
	return v[0] > 0, nil
}

// Agree checks that every rank holds the same values, naming what
// differs: the ranks must agree on the data cursor, the iteration and the
// optimizer step or they would train on different data.
func (g *Group) Agree(what string, names []string, vals []float64) error {
	if g.World() == 1 {
		return nil
	}
	hi := append([]float64(nil), vals...)
	lo := append([]float64(nil), vals...)
	if err := g.g.AllReduce(hi, torch.Max); err != nil {
		return g.wrap("agreement on "+what, err)
	}
	if err := g.g.AllReduce(lo, torch.Min); err != nil {
		return g.wrap("agreement on "+what, err)
	}
	for i := range vals {
		if hi[i] != lo[i] {
			return fmt.Errorf("ranks disagree on %s: %s ranges from %g to %g across ranks (rank %d has %g)", what, names[i], lo[i], hi[i], g.env.Rank, vals[i])
		}
	}
	return nil
}

// Broadcast overwrites ts on every rank with rank 0's.
func (g *Group) Broadcast(ts []*torch.Tensor) error {
	if g.World() == 1 {
		return nil
	}
	return g.wrap("broadcast from rank 0", g.g.Broadcast(ts, 0))
}

// Gather returns every rank's value, in rank order (gob-encoded on the wire).
func Gather[T any](g *Group, v T) ([]T, error) {
	if g.World() == 1 {
		return []T{v}, nil
	}
	// Wrapped, so a nil slice or map encodes too.
	type box struct{ V T }
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(box{v}); err != nil {
		return nil, fmt.Errorf("gather: encode: %w", err)
	}
	parts, err := g.g.AllGather(buf.Bytes())
	if err != nil {
		return nil, g.wrap("all-gather", err)
	}
	out := make([]T, len(parts))
	for r, p := range parts {
		var b box
		if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&b); err != nil {
			return nil, fmt.Errorf("gather: decode rank %d's part: %w", r, err)
		}
		out[r] = b.V
	}
	return out, nil
}

// FromLeader returns rank 0's value of v on every rank.
func FromLeader[T any](g *Group, v T) (T, error) {
	all, err := Gather(g, v)
	if err != nil {
		return v, err
	}
	return all[0], nil
}
