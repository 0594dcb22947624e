package trainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentrl/agentrl/decoding/vllm"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// vllmEngine is rollout.engine vllm: the vLLM server the rollouts sample
// on, and the policy version its weights are.
type vllmEngine struct {
	srv *vllm.Server
	// synced is the policy version the server's weights are; -1 before
	// the first sync (the server starts with the weights of its own
	// --model folder, which need not be the policy's).
	synced int
	// weights is the folder the policy is written to for the server to
	// load (the run folder's vllm-weights).
	weights string
	log     string // the started server's log
}

// startVLLM connects to rollout.vllm's server, starting it first when
// rollout.vllm.command is set (its log in the run folder as vllm.log,
// stopped by Close), and waits until it is ready. Before it starts the
// command it writes the policy it starts with to the run folder's
// vllm-weights, which the command may serve (--model <run>/vllm-weights).
func (t *Trainer) startVLLM() error {
	c := t.cfg.Rollout.VLLM
	e := &vllmEngine{synced: -1, weights: filepath.Join(t.dir, "vllm-weights"), log: filepath.Join(t.dir, "vllm.log")}
	if len(c.Command) > 0 {
		if err := e.write(t); err != nil {
			return err
		}
	}
	srv, err := vllm.Start(context.Background(), vllm.ServerConfig{
		Address: c.Address, Command: c.Command, Env: []string{vllm.DevModeEnv}, Log: e.log,
		StartupTimeout: c.StartupTimeout, RequestTimeout: c.RequestTimeout,
	})
	if err != nil {
		return fmt.Errorf("rollout.engine vllm: %w", err)
	}
	e.srv = srv
	t.vllm = e
	t.log.Info().Str("address", srv.Address()).Str("model", srv.Model()).Bool("started", len(c.Command) > 0).Msg("vLLM server ready")
	return nil
}

// vllmRollout runs a rollout on the vLLM server: its weights brought up to
// the policy's version o.PolicyVersion first (sync), then one episode per
// goroutine, rollout.slots at once.
func (t *Trainer) vllmRollout(ctx context.Context, f rollout.Factory, reqs []rollout.Request, o rollout.Options) ([]*trajectory.Trajectory, rollout.Stats, error) {
	if err := t.syncVLLM(ctx, o.PolicyVersion); err != nil {
		return nil, rollout.Stats{}, err
	}
	trs, rs, err := rollout.Remote{Gen: rollout.VLLM{Client: t.vllm.srv.Client}, Episodes: t.cfg.Rollout.Slots}.Run(ctx, t.agent.Chat, f, reqs, o)
	if err != nil {
		err = t.vllmError(err)
	}
	return trs, rs, err
}

// syncVLLM puts the policy's weights into the server as version v, unless
// they are there already: written to the run folder's vllm-weights
// (merged with LoRA) and loaded by the server (vllm.SyncFromCheckpoint,
// its prefix cache dropped).
func (t *Trainer) syncVLLM(ctx context.Context, v int) error {
	e := t.vllm
	if e.synced == v {
		return nil
	}
	start := time.Now()
	if err := e.write(t); err != nil {
		return err
	}
	if err := e.srv.SyncFromCheckpoint(ctx, e.weights, strconv.Itoa(v)); err != nil {
		return t.vllmError(fmt.Errorf("rollout.engine vllm: load policy version %d: %w", v, err))
	}
	e.synced = v
	t.log.Info().Int("policy_version", v).Dur("took", time.Since(start)).Msg("vLLM server's weights synced")
	return nil
}

// write writes t's policy to e.weights, in place of what was there.
func (e *vllmEngine) write(t *Trainer) error {
	if err := os.RemoveAll(e.weights); err != nil {
		return err
	}
	if err := t.models.ExportWeights(e.weights); err != nil {
		return fmt.Errorf("rollout.engine vllm: write the policy for the server: %w", err)
	}
	return nil
}

// vllmExitWait is how long vllmError waits for a started server whose
// request failed to be reaped, should it have died.
const vllmExitWait = 3 * time.Second

// vllmError adds to err, when the server agentrl started has exited, how
// it exited and where its log is.
func (t *Trainer) vllmError(err error) error {
	if exited, how := t.vllm.srv.Exited(vllmExitWait); exited {
		return fmt.Errorf("%w (the vLLM server exited: %v; its log: %s)", err, how, t.vllm.log)
	}
	return err
}
