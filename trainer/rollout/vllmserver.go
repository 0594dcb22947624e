package rollout

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/vllm"
	"github.com/agentrl/agentrl/trajectory"
)

// vllmExitWait is how long an error waits for a started server whose
// request failed to be reaped, should it have died.
const vllmExitWait = 3 * time.Second

// VLLMRollouts are the rollouts of rollout.engine vllm: the vLLM server
// they sample on, and the policy version its weights are.
type VLLMRollouts struct {
	srv *vllm.Server
	// synced is the policy version the server's weights are; -1 before
	// the first sync (the server starts with the weights of its own
	// --model folder, which need not be the policy's).
	synced int
	// weights is the folder the policy is written to for the server to
	// load (the run folder's vllm-weights); export writes it.
	weights string
	export  func(dir string) error
	// episodes is how many episodes run at once (rollout.slots).
	episodes  int
	serverLog string // the started server's log
	log       zerolog.Logger
}

// StartVLLM connects to the server sc names, starting it first when
// sc.Command is set (its log at sc.Log, stopped by Close), and waits
// until it is ready. Before it starts the command it writes the policy
// (export) to weights, which the command may serve (--model weights).
// Rollouts run episodes at once. The server's --logprobs-mode must report
// the built-in engine's logprobs for every sampling in uses
// (vllm.CheckLogprobsMode), or it is an error saying which mode it needs.
func StartVLLM(sc vllm.ServerConfig, weights string, export func(dir string) error, episodes int, uses []decoding.Sampling, log zerolog.Logger) (*VLLMRollouts, error) {
	v := &VLLMRollouts{synced: -1, weights: weights, export: export, episodes: episodes, serverLog: sc.Log, log: log}
	if len(sc.Command) > 0 {
		if err := v.write(); err != nil {
			return nil, err
		}
	}
	srv, err := vllm.Start(context.Background(), sc)
	if err != nil {
		return nil, fmt.Errorf("rollout.engine vllm: %w", err)
	}
	v.srv = srv
	mode, err := srv.LogprobsMode(context.Background())
	for _, s := range uses {
		if err == nil {
			err = vllm.CheckLogprobsMode(mode, s)
		}
	}
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("rollout.engine vllm: %w", err)
	}
	log.Info().Str("address", srv.Address()).Str("model", srv.Model()).Str("logprobs_mode", mode).Bool("started", len(sc.Command) > 0).Msg("vLLM server ready")
	return v, nil
}

// Run runs a rollout on the server: its weights brought up to the
// policy's version o.PolicyVersion first (Sync), then one episode per
// goroutine, the configured number at once.
func (v *VLLMRollouts) Run(ctx context.Context, chat Chat, f Factory, reqs []Request, o Options) ([]*trajectory.Trajectory, Stats, error) {
	if err := v.Sync(ctx, o.PolicyVersion); err != nil {
		return nil, Stats{}, err
	}
	trs, rs, err := Remote{Gen: VLLM{Client: v.srv.Client}, Episodes: v.episodes}.Run(ctx, chat, f, reqs, o)
	if err != nil {
		err = v.exitError(err)
	}
	return trs, rs, err
}

// Sync puts the policy's weights into the server as version version,
// unless they are there already: written to the weights folder (merged
// with LoRA) and loaded by the server (vllm.SyncFromCheckpoint, its
// prefix cache dropped).
func (v *VLLMRollouts) Sync(ctx context.Context, version int) error {
	if v.synced == version {
		return nil
	}
	start := time.Now()
	if err := v.write(); err != nil {
		return err
	}
	if err := v.srv.SyncFromCheckpoint(ctx, v.weights, strconv.Itoa(version)); err != nil {
		return v.exitError(fmt.Errorf("rollout.engine vllm: load policy version %d: %w", version, err))
	}
	v.synced = version
	v.log.Info().Int("policy_version", version).Dur("took", time.Since(start)).Msg("vLLM server's weights synced")
	return nil
}

// Server is the vLLM server the rollouts sample on.
func (v *VLLMRollouts) Server() *vllm.Server { return v.srv }

// Close stops the server when it was started here.
func (v *VLLMRollouts) Close() { v.srv.Close() }

// write writes the policy to v.weights, in place of what was there.
func (v *VLLMRollouts) write() error {
	if err := os.RemoveAll(v.weights); err != nil {
		return err
	}
	if err := v.export(v.weights); err != nil {
		return fmt.Errorf("rollout.engine vllm: write the policy for the server: %w", err)
	}
	return nil
}

// exitError adds to err, when the server started here has exited, how it
// exited and where its log is.
func (v *VLLMRollouts) exitError(err error) error {
	if exited, how := v.srv.Exited(vllmExitWait); exited {
		return fmt.Errorf("%w (the vLLM server exited: %v; its log: %s)", err, how, v.serverLog)
	}
	return err
}
