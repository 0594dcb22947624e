package program

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// rollouts runs the test agent (testdata/agent.py) in mode over the tiny
// model's engine for one task, samples times, and returns the
// trajectories. edit adjusts the agent settings.
func rollouts(t *testing.T, ctx context.Context, mode string, samples int, edit func(*config.AgentConfig), env ...string) []*trajectory.Trajectory {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the test agent program cannot run")
	}
	m := gatewaytest.Build(t)
	te, err := torch.NewEngine(m.Policy, 4, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer te.Free()
	cfg := config.Default().Agent
	cfg.Command = []string{py, filepath.Join("testdata", "agent.py"), mode}
	cfg.Env = append([]string{"TOOL_JSON=" + gatewaytest.ToolJSON, "SYSTEM=" + gatewaytest.System,
		"QUESTION=" + gatewaytest.Question, "RESPONSE=" + gatewaytest.Response}, env...)
	cfg.Timeout = 30 * time.Second
	if edit != nil {
		edit(&cfg)
	}
	r := &Runner{Cfg: cfg, Format: m.Format, Rewards: reward.DefaultConfig()}
	task := envs.Task{ID: "t1", Dataset: "test", Question: gatewaytest.Question, Answers: []string{"Tarn", "Tarn town"}, Hops: 2}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	trs, st, err := r.Rollout(ctx, torchdecoder.Decoder{Engine: te}, []rollout.Request{{Task: task, Group: 3, Samples: samples}},
		rollout.Options{Sampling: decoding.Sampling{Temperature: 0}, MaxTurnTokens: 48, MaxTotalTokens: 256, Iteration: 2, Split: trajectory.Train})
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if st.Trajectories != len(trs) {
		t.Fatalf("stats count %d trajectories of %d", st.Trajectories, len(trs))
	}
	return trs
}

// A program that plays the learned conversation and prints the answer:
// one trajectory, whose requests are a start and an extension; the action
// tokens are exactly the two completions (the call, and the reply with its
// "<|im_end|>"); everything else is observation (mask 0); the answer is
// scored against the gold with the default scorer (EM, weight 1): reward 1.
// Two samples of the task are two episodes of group 3.
func TestProgramEpisode(t *testing.T) {
	trs := rollouts(t, context.Background(), "good", 2, nil)
	if len(trs) != 2 {
		t.Fatalf("%d trajectories", len(trs))
	}
	m := gatewaytest.Build(t)
	samples := map[int]bool{}
	for _, tr := range trs {
		samples[tr.Sample] = true
		if tr.Group != 3 || tr.Stop != trajectory.StopAnswer || tr.Answer != "Tarn" || !tr.Correct || tr.Reward != 1 || tr.Outcome != 1 {
			t.Fatalf("episode %+v", tr)
		}
		if len(tr.Requests) != 2 || tr.Requests[0].Link != "start" || tr.Requests[1].Link != "extend" || tr.Requests[1].Segment != 0 {
			t.Fatalf("requests %+v", tr.Requests)
		}
		var action []int32
		for i, mk := range tr.Mask {
			if mk == 1 {
				action = append(action, tr.Tokens[i])
			}
		}
		want := append(m.Tok.Encode(gatewaytest.Call), m.Tok.Encode(gatewaytest.Reply+"<|im_end|>")...)
		if !slices.Equal(action, want) || len(tr.Turns) != 2 || tr.PromptLen != tr.Requests[0].PromptTokens {
			t.Fatalf("action tokens %q, turns %d", m.Tok.Decode(action, false), len(tr.Turns))
		}
	}
	if !samples[0] || !samples[1] || trs[0].ID == trs[1].ID {
		t.Fatalf("samples %v, ids %s %s", samples, trs[0].ID, trs[1].ID)
	}
}

// A program that rewrites its history: its second prompt does not extend
// the first, so the episode is two segments, two trajectories sharing the
// episode's reward, the requests on the first.
func TestProgramRewriteSplits(t *testing.T) {
	trs := rollouts(t, context.Background(), "rewrite", 1, nil)
	if len(trs) != 2 || trs[0].ID != "2-train-3-0" || trs[1].ID != "2-train-3-0.1" {
		t.Fatalf("%d trajectories %v", len(trs), ids(trs))
	}
	if r := trs[0].Requests; len(r) != 2 || r[1].Link != "split" || r[1].Segment != 1 || trs[1].Requests != nil {
		t.Fatalf("requests %+v", r)
	}
	if trs[0].Reward != trs[1].Reward || trs[0].Stop != trs[1].Stop || trs[1].Mask[trs[1].PromptLen-1] != 0 || trs[1].Mask[trs[1].PromptLen] != 1 {
		t.Fatalf("segments differ: %+v / %+v", trs[0], trs[1])
	}
}

func ids(trs []*trajectory.Trajectory) []string {
	var out []string
	for _, t := range trs {
		out = append(out, t.ID)
	}
	return out
}

// Every failure is an episode with reward 0 and its stop reason, and the
// program's stderr tail where it wrote one.
func TestProgramFailures(t *testing.T) {
	cases := []struct {
		mode string
		edit func(*config.AgentConfig)
		stop trajectory.StopReason
		msg  string // in Error
	}{
		{"exit", nil, trajectory.StopProgramExit, "exit status 3\nstderr (tail):\nline one\nthe agent crashed: KeyError 'x'"},
		{"hang", func(c *config.AgentConfig) { c.Timeout = 3 * time.Second }, trajectory.StopProgramTimeout, "agent.timeout 3s"},
		{"silent", nil, trajectory.StopNoAnswer, "printed no answer"},
		{"flood", func(c *config.AgentConfig) { c.MaxStdout = 1000 }, trajectory.StopOutputFlood, "agent.max_stdout 1000"},
		{"badreq", nil, trajectory.StopBadRequest, `param "temperature"`},
	}
	for _, c := range cases {
		trs := rollouts(t, context.Background(), c.mode, 1, c.edit)
		tr := trs[0]
		if len(trs) != 1 || tr.Stop != c.stop || tr.Reward != 0 || !tr.Stop.Failed() || !strings.Contains(tr.Error, c.msg) {
			t.Errorf("%s: %d trajectories, stop %q, reward %v, error %q", c.mode, len(trs), tr.Stop, tr.Reward, tr.Error)
		}
	}
	// The stderr tail keeps the end: the last 20 bytes of
	// "...the agent crashed: KeyError 'x'\n" are "ashed: KeyError 'x'\n"
	// (6 + 9 + 4 + 1 bytes), trimmed of the newline.
	tr := rollouts(t, context.Background(), "exit", 1, func(c *config.AgentConfig) { c.StderrTail = 20 })[0]
	if !strings.HasSuffix(tr.Error, "stderr (tail):\nashed: KeyError 'x'") {
		t.Errorf("tail of 20 bytes: %q", tr.Error)
	}
}

// The program's own key works; none, or one that names no episode, is
// refused (the program checks the 401s and answers only if so). A JSON
// answer's reward is added to the score.
func TestProgramKeysAndReportedReward(t *testing.T) {
	tr := rollouts(t, context.Background(), "keys", 1, nil)[0]
	if tr.Answer != "Tarn" || tr.Stop != trajectory.StopAnswer {
		t.Fatalf("keys: %+v", tr)
	}
	tr = rollouts(t, context.Background(), "json", 1, nil)[0]
	if tr.Answer != "Tarn" || tr.Reward != 1.5 || tr.Components[ComponentProgram] != 0.5 || tr.Components["em"] != 1 {
		t.Fatalf("json answer: reward %v, components %v", tr.Reward, tr.Components)
	}
}

// The program's process group dies with its episode: a child it left
// running is killed when it exits.
func TestProgramGroupKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	tr := rollouts(t, context.Background(), "spawn", 1, nil, "PIDFILE="+pidFile)[0]
	if tr.Stop != trajectory.StopAnswer {
		t.Fatalf("spawn: %+v", tr)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the program's child %d outlived the episode", pid)
	}
}

// alive reports whether pid runs (a zombie, killed but not yet reaped by
// its parent, counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// Cancelling the rollout kills the programs in flight and returns their
// episodes as cancelled, promptly.
func TestProgramCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	trs := rollouts(t, ctx, "hang", 2, nil)
	if len(trs) != 2 || trs[0].Stop != trajectory.StopCancelled || trs[1].Stop != trajectory.StopCancelled || time.Since(start) > 20*time.Second {
		t.Fatalf("%d trajectories, %v after %s", len(trs), ids(trs), time.Since(start))
	}
}

// swappingDecoder is a decoder whose weights (version 5) are replaced by
// version 9 at its first prefill after a decode step: between an episode's
// two requests, as the rollout role of asynchronous training swaps them.
type swappingDecoder struct {
	torchdecoder.Decoder
	stepped       bool
	version, used int
}

func (d *swappingDecoder) Prefill(slot int, ids []int64) error {
	d.swap()
	return d.Decoder.Prefill(slot, ids)
}

func (d *swappingDecoder) PrefillBatch(slots []int, ids [][]int64) error {
	d.swap()
	return d.Decoder.PrefillBatch(slots, ids)
}

func (d *swappingDecoder) swap() {
	if d.stepped {
		d.version = 9
	}
}

func (d *swappingDecoder) Step(slots []int, s decoding.Sampling, tokens []int64, logprobs []float32) error {
	d.stepped, d.used = true, d.version
	return d.Decoder.Step(slots, s, tokens, logprobs)
}

// With rollout.Options.Version (asynchronous training), each turn of a
// program's episode records the version that sampled its first token
// through the gateway, and the trajectory its first turn's: new weights
// between the two requests make the turns versions 5 and 9, not the
// Options' PolicyVersion 1. Without it (the synchronous loop) every turn
// is PolicyVersion's.
func TestProgramTurnsKeepTheirVersions(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the test agent program cannot run")
	}
	m := gatewaytest.Build(t)
	cfg := config.Default().Agent
	cfg.Command = []string{py, filepath.Join("testdata", "agent.py"), "good"}
	cfg.Env = []string{"TOOL_JSON=" + gatewaytest.ToolJSON, "SYSTEM=" + gatewaytest.System,
		"QUESTION=" + gatewaytest.Question, "RESPONSE=" + gatewaytest.Response}
	cfg.Timeout = 30 * time.Second
	r := &Runner{Cfg: cfg, Format: m.Format, Rewards: reward.DefaultConfig()}
	task := envs.Task{ID: "t1", Dataset: "test", Question: gatewaytest.Question, Answers: []string{"Tarn"}, Hops: 2}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, async := range []bool{true, false} {
		te, err := torch.NewEngine(m.Policy, 4, 256)
		if err != nil {
			t.Fatal(err)
		}
		dec := &swappingDecoder{Decoder: torchdecoder.Decoder{Engine: te}, version: 5}
		o := rollout.Options{Sampling: decoding.Sampling{Temperature: 0}, MaxTurnTokens: 48, MaxTotalTokens: 256, Iteration: 2,
			Split: trajectory.Train, PolicyVersion: 1}
		want := []int{1, 1}
		if async {
			o.Version = func() int { return dec.used }
			want = []int{5, 9}
		}
		trs, _, err := r.Rollout(context.Background(), dec, []rollout.Request{{Task: task, Group: 0, Samples: 1}}, o)
		te.Free()
		if err != nil {
			t.Fatal(err)
		}
		if len(trs) != 1 || len(trs[0].Turns) != 2 {
			t.Fatalf("async %v: %d trajectories, want 1 of 2 turns", async, len(trs))
		}
		got := []int{trs[0].Turns[0].PolicyVersion, trs[0].Turns[1].PolicyVersion}
		if !slices.Equal(got, want) || trs[0].PolicyVersion != want[0] {
			t.Errorf("async %v: turn versions %v and trajectory version %d, want %v and %d", async, got, trs[0].PolicyVersion, want, want[0])
		}
	}
}
