package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// RolloutConfig is the multi-turn rollout benchmark: Trajectories episodes
// of a random-weight model, each with ToolTurns tool turns and a final
// turn. A random model calls no tool by itself, so every turn ends after a
// scheduled number of tokens (TurnTokens plus a seeded jitter of up to
// TurnJitter, the same in every run) and is treated as a tool call whose
// response (ObsTokens tokens) comes back after LatencyMS.
type RolloutConfig struct {
	Model        Config  `json:"model"`
	Trajectories int     `json:"trajectories"`
	ToolTurns    int     `json:"tool_turns"`
	TurnTokens   int     `json:"turn_tokens"`
	TurnJitter   int     `json:"turn_jitter"`
	ObsTokens    int     `json:"obs_tokens"`
	LatencyMS    float64 `json:"latency_ms"`
	Slots        int     `json:"slots"`
	Repeats      int     `json:"repeats"`
}

// DefaultRollout is the target scenario: 32 trajectories of 3 tool turns
// and a final turn of 48 to 80 tokens each (an agent's short reasoning and
// a call), 100 ms tool latency against 0 ms, on the small model.
func DefaultRollout() RolloutConfig {
	m, _ := Preset("small", "generate")
	m.PromptLen = 64
	return RolloutConfig{Model: m, Trajectories: 32, ToolTurns: 3, TurnTokens: 48, TurnJitter: 32, ObsTokens: 24,
		LatencyMS: 100, Slots: 32, Repeats: 3}
}

// RolloutResult is the benchmark's JSON line.
type RolloutResult struct {
	Mode         string        `json:"mode"`
	TokensPerS   float64       `json:"tokens_per_s"`  // generated tokens / wall time, with the latency
	LatencyRatio float64       `json:"latency_ratio"` // wall time with the latency / without
	WallS        float64       `json:"wall_s"`        // median wall time with the latency
	WallNoLatS   float64       `json:"wall_no_latency_s"`
	Generated    int           `json:"generated_tokens"`
	MeanBatch    float64       `json:"mean_decode_batch"`
	Steps        [2]int        `json:"decode_steps"` // without, with the latency
	IdleS        [2]float64    `json:"idle_s"`       // time no slot could decode, without / with
	PrefillS     [2]float64    `json:"prefill_s"`    // prompt and observation prefills, without / with
	Config       RolloutConfig `json:"config"`
}

// JSON renders the result as one line.
func (r RolloutResult) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Rollout runs the scenario without and with the tool latency (after a
// warm-up) and reports the medians.
func Rollout(cfg RolloutConfig) (RolloutResult, error) {
	if err := cfg.validate(); err != nil {
		return RolloutResult{}, err
	}
	cfg.Model.Threads = cfg.Model.threads()
	var res RolloutResult
	err := onWorker(cfg.Model.Threads, func() error {
		var err error
		res, err = rolloutBench(cfg)
		return err
	})
	return res, err
}

func (cfg RolloutConfig) validate() error {
	if cfg.Model.Model != "" {
		return fmt.Errorf("bench rollout: model %s: a model's architecture is not benchmarked here (the shape fields only)", cfg.Model.Model)
	}
	if cfg.Trajectories >= cfg.Model.Vocab-1 {
		return fmt.Errorf("bench rollout: %d trajectories need a vocabulary above %d", cfg.Trajectories, cfg.Trajectories+1)
	}
	if cfg.Trajectories < 1 || cfg.ToolTurns < 0 || cfg.TurnTokens < 1 || cfg.Slots < 1 || cfg.Repeats < 1 || cfg.Model.PromptLen < 1 {
		return fmt.Errorf("bench rollout: trajectories, turn_tokens, slots, repeats and prompt_len must be positive")
	}
	return cfg.Model.validate()
}

// prompts are the scenario's prompts: trajectory i's first token is i,
// the rest drawn from r.
func (cfg RolloutConfig) prompts(r *rand.Rand) [][]int32 {
	prompts := make([][]int32, cfg.Trajectories)
	for i := range prompts {
		prompts[i] = []int32{int32(i)} // the first token names the trajectory
		for j := 1; j < cfg.Model.PromptLen; j++ {
			prompts[i] = append(prompts[i], int32(r.IntN(cfg.Model.Vocab-1)))
		}
	}
	return prompts
}

// requests are the scenario's episodes, one group each, and the factory
// of their environments with the tool latency.
func (cfg RolloutConfig) requests(latency time.Duration) ([]rollout.Request, rollout.Factory) {
	reqs := make([]rollout.Request, cfg.Trajectories)
	for i := range reqs {
		reqs[i] = rollout.Request{Task: envs.Task{ID: fmt.Sprint(i), Question: fmt.Sprint(i)}, Group: i, Samples: 1}
	}
	return reqs, func(t envs.Task) (rollout.Setup, error) {
		return rollout.Setup{User: t.Question, Env: &benchEnv{toolTurns: cfg.ToolTurns, latency: latency}}, nil
	}
}

// checkEnded refuses a run whose episodes did not all take the
// scenario's turns.
func checkEnded(trs []*trajectory.Trajectory, turns int) error {
	for _, tr := range trs {
		if tr.Stop != trajectory.StopAnswer || len(tr.Turns) != turns {
			return fmt.Errorf("bench rollout: trajectory %s ended %s after %d turns (%s)", tr.ID, tr.Stop, len(tr.Turns), tr.Error)
		}
	}
	return nil
}

func rolloutBench(cfg RolloutConfig) (RolloutResult, error) {
	turns := cfg.ToolTurns + 1
	maxLen := cfg.Model.PromptLen + turns*(cfg.TurnTokens+cfg.TurnJitter+cfg.ObsTokens+2)
	mc, err := cfg.Model.model(maxLen)
	if err != nil {
		return RolloutResult{}, err
	}
	m, err := torch.NewRandomModel(mc, torch.Float32, torch.CPU, false, 1)
	if err != nil {
		return RolloutResult{}, err
	}
	defer m.Free()
	e, err := agent.NewSampler(m, torch.Float32, agent.Mode{}, cfg.Slots, maxLen)
	if err != nil {
		return RolloutResult{}, err
	}
	defer e.Free()
	r := rand.New(rand.NewPCG(7, 7))
	sched := make([][]int, cfg.Trajectories) // tokens of each turn
	for i := range sched {
		for t := 0; t < turns; t++ {
			sched[i] = append(sched[i], cfg.TurnTokens+r.IntN(cfg.TurnJitter+1))
		}
	}
	prompts := cfg.prompts(r)
	end := int32(cfg.Model.Vocab - 1)
	run := func(latency time.Duration) (time.Duration, rollout.Stats, error) {
		dec := &scheduledDecoder{Decoder: e.Decoder(), sched: sched, end: end, slotTraj: make([]int, cfg.Slots), pos: make([][2]int, cfg.Slots)}
		ch := &benchChat{prompts: prompts, end: end, obs: cfg.ObsTokens, vocab: cfg.Model.Vocab}
		reqs, factory := cfg.requests(latency)
		t0 := time.Now()
		trs, st, err := rollout.Run(context.Background(), dec, ch, factory, reqs, rollout.Options{
			Sampling: decoding.Sampling{Temperature: 1}, MaxTurnTokens: maxLen, MaxTotalTokens: maxLen, Split: trajectory.Train})
		wall := time.Since(t0)
		if err == nil {
			err = checkEnded(trs, turns)
		}
		return wall, st, err
	}
	if _, _, err := run(0); err != nil { // warm-up
		return RolloutResult{}, err
	}
	var with, without []float64
	var st, st0 rollout.Stats
	for i := 0; i < cfg.Repeats; i++ {
		w0, s0, err := run(0)
		if err != nil {
			return RolloutResult{}, err
		}
		w1, s1, err := run(time.Duration(cfg.LatencyMS * float64(time.Millisecond)))
		if err != nil {
			return RolloutResult{}, err
		}
		without, with, st, st0 = append(without, w0.Seconds()), append(with, w1.Seconds()), s1, s0
	}
	res := RolloutResult{Mode: "rollout", WallS: median(with), WallNoLatS: median(without), Generated: st.Generated,
		MeanBatch: st.MeanBatch, Config: cfg, Steps: [2]int{st0.Steps, st.Steps},
		IdleS: [2]float64{st0.Idle.Seconds(), st.Idle.Seconds()}, PrefillS: [2]float64{st0.Prefill.Seconds(), st.Prefill.Seconds()}}
	res.LatencyRatio = res.WallS / res.WallNoLatS
	res.TokensPerS = float64(st.Generated) / res.WallS
	return res, nil
}

// scheduledDecoder is the real engine, except that the token ending each
// scheduled turn is reported as the turn-end token.
type scheduledDecoder struct {
	torchdecoder.Decoder
	sched    [][]int
	end      int32
	slotTraj []int
	pos      [][2]int // per slot: turn, tokens in the turn
}

func (d *scheduledDecoder) Step(slots []int, s decoding.Sampling, toks []int64, lps []float32) error {
	if err := d.Decoder.Step(slots, s, toks, lps); err != nil {
		return err
	}
	for i, sl := range slots {
		if toks[i] == int64(d.end) {
			toks[i] = 0 // only the schedule ends turns
		}
		p := &d.pos[sl]
		p[1]++
		if p[1] >= d.sched[d.slotTraj[sl]][p[0]] {
			toks[i] = int64(d.end)
			p[0]++
			p[1] = 0
		}
	}
	return nil
}

// benchChat renders trajectory i's prompt as its prompt tokens and every
// observation as the same ObsTokens tokens.
type benchChat struct {
	prompts    [][]int32
	end        int32
	obs, vocab int
}

func (c *benchChat) Prompt(_, user string, _ []json.RawMessage) ([]int32, error) {
	var i int
	fmt.Sscan(user, &i)
	return c.prompts[i], nil
}

func (c *benchChat) Observation(_, responses []string, _ bool) []int32 {
	out := make([]int32, c.obs)
	for i := range out {
		out[i] = int32((i * 7919) % (c.vocab - 1))
	}
	return out
}

func (c *benchChat) EndsTurn(id int32) (bool, bool) { return id == c.end, true }
func (c *benchChat) StopIDs() []int32               { return []int32{c.end} }
func (c *benchChat) Decode(ids []int32) string      { return "" }

// A prefill of a prompt (into an empty slot) tells the decoder which
// trajectory the slot holds: a prompt's first token is its index.
func (d *scheduledDecoder) PrefillBatch(slots []int, ids [][]int64) error {
	for i, slot := range slots {
		if n, err := d.Engine.Len(slot); err == nil && n == 0 {
			d.slotTraj[slot] = int(ids[i][0])
			d.pos[slot] = [2]int{}
		}
	}
	return d.Decoder.PrefillBatch(slots, ids)
}

// benchEnv answers ToolTurns turns with a response after the latency, then
// ends the episode at the next turn.
type benchEnv struct {
	toolTurns int
	latency   time.Duration
	turns     int
}

func (e *benchEnv) Step(ctx context.Context, _ envs.Action) (envs.StepResult, error) {
	e.turns++
	if e.turns > e.toolTurns {
		return envs.StepResult{Done: true, Stop: trajectory.StopAnswer}, nil
	}
	if e.latency > 0 {
		select {
		case <-time.After(e.latency):
		case <-ctx.Done():
			return envs.StepResult{}, ctx.Err()
		}
	}
	return envs.StepResult{Responses: []string{"ok"}, Calls: []trajectory.ToolCall{{Name: "sleep", OK: true}}}, nil
}

func (e *benchEnv) Outcome() (float64, map[string]float64) { return 0, nil }
