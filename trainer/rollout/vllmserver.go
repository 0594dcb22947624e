package rollout

import (
	"context"
	"fmt"
	"os"
	"slices"
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
	w      VLLMWeights
	// episodes is how many episodes run at once (rollout.slots).
	episodes  int
	serverLog string // the started server's log
	log       zerolog.Logger
}

// VLLMWeights is how the policy reaches the server: its full weights
// written to Dir (Export) and reloaded at every sync, or, with Adapters,
// the base's weights written to Dir once and the policy's LoRA adapters
// written to AdapterDir (Adapters) and loaded at every sync as the
// server's LoRA adapters named AdapterName, which the completions name.
type VLLMWeights struct {
	// Dir is the folder of the full weights (the run folder's
	// vllm-weights), which a started server may serve (--model Dir).
	Dir string
	// Export writes the policy's full weights (merged with LoRA) to a
	// folder as a Hugging Face model; with Adapters, the base's.
	Export func(dir string) error
	// Adapters, when set, writes the policy's LoRA adapters to a folder
	// as PEFT does.
	Adapters    func(dir string) error
	AdapterDir  string
	AdapterName string
}

// StartVLLM connects to the server sc names, starting it first when
// sc.Command is set (its log at sc.Log, stopped by Close), and waits
// until it is ready. Before it starts the command it writes w's full
// weights (the base's with adapters) to w.Dir, which the command may
// serve (--model w.Dir). Rollouts run episodes at once. The server's
// --logprobs-mode must report the built-in engine's logprobs for every
// sampling in uses (vllm.CheckLogprobsMode), or it is an error saying
// which mode it needs.
func StartVLLM(sc vllm.ServerConfig, w VLLMWeights, episodes int, uses []decoding.Sampling, log zerolog.Logger) (*VLLMRollouts, error) {
	v := &VLLMRollouts{synced: -1, w: w, episodes: episodes, serverLog: sc.Log, log: log}
	if len(sc.Command) > 0 {
		if err := write(w.Dir, w.Export); err != nil {
			return nil, err
		}
	}
	srv, err := vllm.Start(context.Background(), sc)
	if err != nil {
		return nil, fmt.Errorf("rollout.engine vllm: %w", err)
	}
	v.srv = srv
	if err := checkLogprobsMode(srv.Client, uses); err != nil {
		srv.Close()
		return nil, fmt.Errorf("rollout.engine vllm: %w", err)
	}
	log.Info().Str("address", srv.Address()).Str("model", srv.Model()).Bool("started", len(sc.Command) > 0).
		Bool("lora_adapters", w.Adapters != nil).Msg("vLLM server ready")
	return v, nil
}

// checkLogprobsMode reads the server's --logprobs-mode and checks it
// against every sampling in uses, unless each of them takes either mode
// vLLM has for logprobs (greedy, or temperature 1 alone): then the
// server is not asked (its /server_info takes seconds).
func checkLogprobsMode(c *vllm.Client, uses []decoding.Sampling) error {
	if !slices.ContainsFunc(uses, func(s decoding.Sampling) bool { return len(vllm.LogprobsModes(s)) < 2 }) {
		return nil
	}
	mode, err := c.LogprobsMode(context.Background())
	for _, s := range uses {
		if err == nil {
			err = vllm.CheckLogprobsMode(mode, s)
		}
	}
	return err
}

// Run runs a rollout on the server: its weights brought up to the
// policy's version o.PolicyVersion first (Sync), then one episode per
// goroutine, the configured number at once.
func (v *VLLMRollouts) Run(ctx context.Context, chat Chat, f Factory, reqs []Request, o Options) ([]*trajectory.Trajectory, Stats, error) {
	if err := v.Sync(ctx, o.PolicyVersion); err != nil {
		return nil, Stats{}, err
	}
	trs, rs, err := Remote{Gen: VLLM{Client: v.srv.Client, Model: v.Model()}, Episodes: v.episodes}.Run(ctx, chat, f, reqs, o)
	if err != nil {
		err = v.exitError(err)
	}
	return trs, rs, err
}

// Sync puts the policy's weights into the server as version version,
// unless they are there already: written to the weights folder (merged
// with LoRA) and loaded by the server (vllm.SyncFromCheckpoint, its
// prefix cache dropped); with adapters, the base's weights so at the
// first sync, and the adapters written and loaded by the server
// (vllm.SyncAdapter) at every one.
func (v *VLLMRollouts) Sync(ctx context.Context, version int) error {
	if v.synced == version {
		return nil
	}
	start := time.Now()
	name := strconv.Itoa(version)
	if v.synced == -1 || v.w.Adapters == nil {
		if err := write(v.w.Dir, v.w.Export); err != nil {
			return err
		}
		if err := v.srv.SyncFromCheckpoint(ctx, v.w.Dir, name); err != nil {
			return v.exitError(fmt.Errorf("rollout.engine vllm: load policy version %d: %w", version, err))
		}
	}
	if v.w.Adapters != nil {
		if err := write(v.w.AdapterDir, v.w.Adapters); err != nil {
			return err
		}
		if err := v.srv.SyncAdapter(ctx, v.w.AdapterName, v.w.AdapterDir, name); err != nil {
			return v.exitError(fmt.Errorf("rollout.engine vllm: load policy version %d's adapters: %w", version, err))
		}
	}
	v.synced = version
	v.log.Info().Int("policy_version", version).Dur("took", time.Since(start)).Msg("vLLM server's weights synced")
	return nil
}

// Model is what the rollouts' completions name: the LoRA adapters' name,
// or "" (the served model) without them.
func (v *VLLMRollouts) Model() string {
	if v.w.Adapters == nil {
		return ""
	}
	return v.w.AdapterName
}

// Server is the vLLM server the rollouts sample on.
func (v *VLLMRollouts) Server() *vllm.Server { return v.srv }

// Close stops the server when it was started here.
func (v *VLLMRollouts) Close() { v.srv.Close() }

// write writes export's folder to dir, in place of what was there.
func write(dir string, export func(dir string) error) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := export(dir); err != nil {
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
