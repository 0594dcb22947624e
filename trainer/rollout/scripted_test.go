package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trajectory"
)

// A token-level stand-in for the policy and chat. Ids:
//
//	1 = <|im_end|> (ends and closes a turn), 2 = </tool_call> (ends a turn,
//	left open), 10 = prompt marker, 20 = observation marker,
//	30+i = the i-th response of an observation, 100+k = task k's id in its
//	prompt, 200+k*10+t = task k's word in turn t.
const (
	tokImEnd   = 1
	tokToolEnd = 2
	tokPrompt  = 10
	tokObs     = 20
)

type fakeChat struct {
	mu          sync.Mutex
	badPrompt   string // a user text whose prompt fails to render
	observation int
}

func (c *fakeChat) Prompt(system, user string, tools []json.RawMessage) ([]int32, error) {
	if user == c.badPrompt {
		return nil, fmt.Errorf("cannot render %q", user)
	}
	var k int
	fmt.Sscanf(user, "task %d", &k)
	return []int32{tokPrompt, int32(100 + k)}, nil
}

func (c *fakeChat) Observation(_, responses []string, closed bool) []int32 {
	c.mu.Lock()
	c.observation++
	c.mu.Unlock()
	var out []int32
	if !closed {
		out = append(out, tokImEnd)
	}
	out = append(out, tokObs)
	for i := range responses {
		out = append(out, int32(30+i))
	}
	return out
}

func (c *fakeChat) EndsTurn(id int32) (bool, bool) {
	switch id {
	case tokImEnd:
		return true, true
	case tokToolEnd:
		return true, false
	}
	return false, false
}

func (c *fakeChat) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		switch id {
		case tokImEnd:
			b.WriteString("<|im_end|>")
		case tokToolEnd:
			b.WriteString("</tool_call>")
		default:
			fmt.Fprintf(&b, "w%d ", id)
		}
	}
	return b.String()
}

// script is what task k says: turns 0..k-1 each emit its word 3 times and
// call a tool (</tool_call>); turn k emits its word once and closes.
func script(k, turn int) []int32 {
	w := int32(200 + k*10 + turn)
	if turn < k {
		return []int32{w, w, w, tokToolEnd}
	}
	return []int32{w, tokImEnd}
}

// scriptedDecoder keeps, per slot, the tokens in its "cache", and samples
// the next token of the task's script from that history, checking that the
// history is exactly what the task should have seen so far.
type scriptedDecoder struct {
	t        *testing.T
	slots    int
	hist     [][]int32
	prefills int // prefills holding a prompt
	copies   int
	maxBatch int
	batches  []int // the slots of each PrefillBatch call
}

func newScripted(t *testing.T, slots int) *scriptedDecoder {
	return &scriptedDecoder{t: t, slots: slots, hist: make([][]int32, slots)}
}

func (d *scriptedDecoder) Slots() int  { return d.slots }
func (d *scriptedDecoder) MaxLen() int { return 1000 }
func (d *scriptedDecoder) Prefill(slot int, ids []int64) error {
	if ids[0] == tokPrompt {
		if len(d.hist[slot]) != 0 {
			d.t.Errorf("prompt prefilled into slot %d which still holds %v", slot, d.hist[slot])
		}
		d.prefills++
	}
	for _, v := range ids {
		d.hist[slot] = append(d.hist[slot], int32(v))
	}
	return nil
}
func (d *scriptedDecoder) PrefillBatch(slots []int, ids [][]int64) error {
	return prefillEach(d.t, &d.batches, d.Prefill, slots, ids)
}

// prefillEach is a stand-in decoder's PrefillBatch: it records the call's
// size in batches, checks that the slots are distinct and prefills each.
func prefillEach(t *testing.T, batches *[]int, prefill func(int, []int64) error, slots []int, ids [][]int64) error {
	*batches = append(*batches, len(slots))
	seen := map[int]bool{}
	for i, sl := range slots {
		if seen[sl] {
			t.Errorf("slot %d prefilled twice in one batch %v", sl, slots)
		}
		seen[sl] = true
		if err := prefill(sl, ids[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *scriptedDecoder) CopySlot(src, dst int) error {
	d.copies++
	d.hist[dst] = append([]int32(nil), d.hist[src]...)
	return nil
}
func (d *scriptedDecoder) Release(slot int) error { d.hist[slot] = nil; return nil }
func (d *scriptedDecoder) Seed(int, uint64) error { return nil }
func (d *scriptedDecoder) Step(slots []int, _ decoding.Sampling, toks []int64, lps []float32) error {
	d.maxBatch = max(d.maxBatch, len(slots))
	for i, sl := range slots {
		h := d.hist[sl]
		k := int(h[1] - 100)
		turn := 0
		for _, v := range h {
			if v == tokObs {
				turn++
			}
		}
		// tokens of this turn so far: after the last observation's tokens
		last := len(h)
		for last > 0 && h[last-1] != tokObs && !(h[last-1] >= 30 && h[last-1] < 40) && h[last-1] != int32(100+k) {
			last--
		}
		sc := script(k, turn)
		pos := len(h) - last
		if pos >= len(sc) {
			d.t.Fatalf("slot %d (task %d) decodes past its script: %v", sl, k, h)
		}
		toks[i] = int64(sc[pos])
		lps[i] = -0.01 * float32(sc[pos])
		d.hist[sl] = append(h, sc[pos])
	}
	return nil
}

// fakeEnv answers a turn that ends with </tool_call> with one response and
// ends the episode on <|im_end|>; it enforces the limits the way ToolEnv
// does.
type fakeEnv struct {
	k        int
	maxTurns int
	budget   int
	turns    int
	delay    time.Duration
	panicOn  int // turn at which Step panics (0 = never)
}

func (e *fakeEnv) Step(ctx context.Context, a envs.Action) (envs.StepResult, error) {
	e.turns++
	if e.panicOn == e.turns {
		panic("boom")
	}
	if e.delay > 0 {
		select {
		case <-time.After(e.delay):
		case <-ctx.Done():
			return envs.StepResult{Done: true, Stop: trajectory.StopCancelled}, ctx.Err()
		}
	}
	switch {
	case a.TotalTokens >= e.budget || a.TurnTruncated:
		return envs.StepResult{Done: true, Stop: trajectory.StopMaxTokens}, nil
	case strings.HasSuffix(a.Text, "<|im_end|>"):
		return envs.StepResult{Done: true, Stop: trajectory.StopAnswer, Answer: a.Text}, nil
	case e.turns >= e.maxTurns:
		return envs.StepResult{Done: true, Stop: trajectory.StopMaxTurns}, nil
	}
	return envs.StepResult{Responses: []string{"r"}, ProcessReward: 0.5, Evidence: 1,
		Calls: []trajectory.ToolCall{{Name: "search", Args: `{"query":"q"}`, Result: "r", OK: true}}}, nil
}

func (e *fakeEnv) Outcome() (float64, map[string]float64) {
	return float64(e.k), map[string]float64{"em": 1}
}

func factory(maxTurns, budget int, delay time.Duration) Factory {
	return func(task envs.Task) (Setup, error) {
		var k int
		fmt.Sscanf(task.ID, "t%d", &k)
		return Setup{User: task.Question, Env: &fakeEnv{k: k, maxTurns: maxTurns, budget: budget, delay: delay}}, nil
	}
}

// task k names k+1 supporting passages (its fake environment credits one
// a tool turn, so k of them).
func task(k int) envs.Task {
	return envs.Task{ID: fmt.Sprintf("t%d", k), Question: fmt.Sprintf("task %d", k), Answers: []string{"a"},
		Support: make([]string, k+1)}
}

// expected rebuilds task k's token sequence and mask by hand from the script.
func expected(k int) ([]int32, []uint8) {
	toks := []int32{tokPrompt, int32(100 + k)}
	mask := []uint8{0, 0}
	for turn := 0; turn <= k; turn++ {
		for _, v := range script(k, turn) {
			toks = append(toks, v)
			mask = append(mask, 1)
		}
		if turn < k { // </tool_call> left the turn open: <|im_end|>, obs, one response
			toks = append(toks, tokImEnd, tokObs, 30)
			mask = append(mask, 0, 0, 0)
		}
	}
	return toks, mask
}

func byID(trs []*trajectory.Trajectory) map[string]*trajectory.Trajectory {
	m := map[string]*trajectory.Trajectory{}
	for _, t := range trs {
		m[t.ID] = t
	}
	return m
}

func opts() Options {
	return Options{MaxTurnTokens: 16, MaxTotalTokens: 200, Split: trajectory.Train, Iteration: 3}
}

// Masks are 1 exactly on sampled tokens; observations land in the right
// slot; slots are reused without leaking state (7 groups of 2 through 4
// slots); each group shares one prompt prefill.
func TestScriptedRollout(t *testing.T) {
	dec := newScripted(t, 4)
	var reqs []Request
	for k := 0; k < 7; k++ {
		reqs = append(reqs, Request{Task: task(k), Group: k, Samples: 2})
	}
	trs, st, err := Run(context.Background(), dec, &fakeChat{}, factory(10, 1000, 0), reqs, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 14 {
		t.Fatalf("%d trajectories, want 14", len(trs))
	}
	if dec.prefills != 7 || dec.copies != 7 {
		t.Fatalf("prompt prefills %d, copies %d; want 7 and 7 (one prefill per group)", dec.prefills, dec.copies)
	}
	m := byID(trs)
	for k := 0; k < 7; k++ {
		wantT, wantM := expected(k)
		for s := 0; s < 2; s++ {
			tr := m[fmt.Sprintf("3-train-%d-%d", k, s)]
			if tr == nil {
				t.Fatalf("missing trajectory of group %d sample %d", k, s)
			}
			if fmt.Sprint(tr.Tokens) != fmt.Sprint(wantT) || fmt.Sprint(tr.Mask) != fmt.Sprint(wantM) {
				t.Fatalf("task %d: tokens %v mask %v\nwant %v %v", k, tr.Tokens, tr.Mask, wantT, wantM)
			}
			for i, v := range tr.Tokens {
				want := float32(0)
				if wantM[i] == 1 {
					want = -0.01 * float32(v)
				}
				if tr.Logprobs[i] != want {
					t.Fatalf("task %d token %d: logprob %v want %v", k, i, tr.Logprobs[i], want)
				}
			}
			if tr.PromptLen != 2 || tr.TurnOf[0] != -1 || tr.TurnOf[len(tr.TurnOf)-1] != int16(k) {
				t.Fatalf("task %d: prompt len %d turn-of %v", k, tr.PromptLen, tr.TurnOf)
			}
			if tr.Stop != trajectory.StopAnswer || len(tr.Turns) != k+1 {
				t.Fatalf("task %d: stop %s after %d turns", k, tr.Stop, len(tr.Turns))
			}
			// outcome k, plus 0.5 per tool turn; one supporting passage of
			// k+1 per tool turn
			if tr.Outcome != float64(k) || tr.Reward != float64(k)+0.5*float64(k) {
				t.Fatalf("task %d: outcome %v reward %v", k, tr.Outcome, tr.Reward)
			}
			if tr.Support != k+1 || tr.Evidence != k || tr.Turns[k].Evidence != 0 || k > 0 && tr.Turns[0].Evidence != 1 {
				t.Fatalf("task %d: evidence %d of %d, turns %+v", k, tr.Evidence, tr.Support, tr.Turns)
			}
			if k > 0 && (len(tr.Turns[0].Calls) != 1 || tr.Turns[0].Calls[0].Name != "search" || !tr.Turns[0].Calls[0].OK ||
				tr.Turns[0].GenTokens != 4) {
				t.Fatalf("task %d turn record %+v", k, tr.Turns[0])
			}
		}
	}
	if st.Generated == 0 || st.Steps == 0 || dec.maxBatch > 4 {
		t.Fatalf("stats %+v, max batch %d", st, dec.maxBatch)
	}
}

// The prefills of one scheduling round go to the decoder in one call: in
// deterministic mode, four one-sample groups (tasks 1-4, task k calling a
// tool in turns 0..k-1, each tool turn 4 tokens long, the closing turn 2)
// on four slots start together (4 prompts), end their first turns at the
// same step (4 observations), and then leave one by one as each closes:
// 3, 2 and 1 observations (hand-worked from script). The trajectories are
// those of the script, as when each slot was prefilled on its own.
func TestPrefillsBatchedPerRound(t *testing.T) {
	dec := newScripted(t, 4)
	var reqs []Request
	for k := 1; k <= 4; k++ {
		reqs = append(reqs, Request{Task: task(k), Group: k, Samples: 1})
	}
	o := opts()
	o.Deterministic = true
	trs, st, err := Run(context.Background(), dec, &fakeChat{}, factory(10, 1000, 0), reqs, o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dec.batches) != "[4 4 3 2 1]" {
		t.Errorf("prefill calls of %v slots, want [4 4 3 2 1]", dec.batches)
	}
	// 4 prompts of 2 tokens, and 1+2+3+4 observations of 3 tokens
	if st.Prefilled != 4*2+10*3 {
		t.Errorf("%d tokens prefilled, want %d", st.Prefilled, 4*2+10*3)
	}
	m := byID(trs)
	for k := 1; k <= 4; k++ {
		want, _ := expected(k)
		if tr := m[fmt.Sprintf("3-train-%d-0", k)]; tr == nil || fmt.Sprint(tr.Tokens) != fmt.Sprint(want) {
			t.Errorf("task %d: %v, want %v", k, tr, want)
		}
	}
}

// Limits end trajectories with the right stop reason, marked truncated,
// never dropped.
func TestLimits(t *testing.T) {
	cases := []struct {
		name                string
		maxTurns, turnToks  int
		budget              int
		k                   int
		want                trajectory.StopReason
		wantTokens, wantGen int
	}{
		// task 3 calls tools on turns 0..2; with 2 turns allowed the env stops it
		{"max turns", 2, 16, 1000, 3, trajectory.StopMaxTurns, 2 + 4 + 3 + 4, 8},
		// per-turn limit of 2 tokens cuts turn 0 after "w w"
		{"turn tokens", 10, 2, 1000, 3, trajectory.StopMaxTokens, 4, 2},
		// total budget of 8 tokens: prompt 2 + turn 0 (4) + observation (3) would pass it
		{"total tokens", 10, 16, 8, 3, trajectory.StopMaxTokens, 6, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := opts()
			o.MaxTurnTokens = c.turnToks
			o.MaxTotalTokens = c.budget
			if o.MaxTotalTokens > 200 {
				o.MaxTotalTokens = 200
			}
			trs, _, err := Run(context.Background(), newScripted(t, 2), &fakeChat{}, factory(c.maxTurns, c.budget, 0),
				[]Request{{Task: task(c.k), Samples: 1}}, o)
			if err != nil {
				t.Fatal(err)
			}
			tr := trs[0]
			if tr.Stop != c.want || !tr.Stop.Truncated() {
				t.Fatalf("stop %s, want %s", tr.Stop, c.want)
			}
			if len(tr.Tokens) != c.wantTokens || tr.ActionTokens() != c.wantGen {
				t.Fatalf("%d tokens (%d generated), want %d (%d)", len(tr.Tokens), tr.ActionTokens(), c.wantTokens, c.wantGen)
			}
		})
	}
}

// A panicking environment and an unrenderable prompt end only their own
// trajectories; the rest of the batch completes.
func TestFailuresStayLocal(t *testing.T) {
	chat := &fakeChat{badPrompt: "task 2"}
	fac := func(task envs.Task) (Setup, error) {
		var k int
		fmt.Sscanf(task.ID, "t%d", &k)
		e := &fakeEnv{k: k, maxTurns: 10, budget: 1000}
		if k == 3 {
			e.panicOn = 2
		}
		return Setup{User: task.Question, Env: e}, nil
	}
	var reqs []Request
	for k := 1; k <= 4; k++ {
		reqs = append(reqs, Request{Task: task(k), Group: k, Samples: 1})
	}
	trs, _, err := Run(context.Background(), newScripted(t, 2), chat, fac, reqs, opts())
	if err != nil {
		t.Fatal(err)
	}
	m := byID(trs)
	if tr := m["3-train-2-0"]; tr.Stop != trajectory.StopError || !strings.Contains(tr.Error, "cannot render") {
		t.Fatalf("bad prompt: %+v", tr)
	}
	if tr := m["3-train-3-0"]; tr.Stop != trajectory.StopError || !strings.Contains(tr.Error, "panicked") {
		t.Fatalf("panicking env: stop %s error %q", tr.Stop, tr.Error)
	}
	for _, id := range []string{"3-train-1-0", "3-train-4-0"} {
		if m[id].Stop != trajectory.StopAnswer {
			t.Fatalf("%s: %s", id, m[id].Stop)
		}
	}
}

// Decoding never waits for a tool while another slot can run: with a slow
// tool on task 3 only, the other tasks finish while it waits.
func TestSlowToolDoesNotBlockOthers(t *testing.T) {
	fac := func(task envs.Task) (Setup, error) {
		var k int
		fmt.Sscanf(task.ID, "t%d", &k)
		e := &fakeEnv{k: k, maxTurns: 10, budget: 1000}
		if k == 3 {
			e.delay = 150 * time.Millisecond
		}
		return Setup{User: task.Question, Env: e}, nil
	}
	var order []string
	o := opts()
	o.OnDone = func(tr *trajectory.Trajectory) { order = append(order, tr.TaskID) }
	reqs := []Request{{Task: task(3), Group: 0, Samples: 1}, {Task: task(4), Group: 1, Samples: 1}, {Task: task(5), Group: 2, Samples: 1}}
	if _, _, err := Run(context.Background(), newScripted(t, 2), &fakeChat{}, fac, reqs, o); err != nil {
		t.Fatal(err)
	}
	// t4 and t5 (admitted when t4 frees its slot) finish before slow t3.
	if fmt.Sprint(order) != "[t4 t5 t3]" {
		t.Fatalf("finish order %v, want [t4 t5 t3]", order)
	}
}

// Cancellation returns every trajectory, unfinished ones marked cancelled.
func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	reqs := []Request{{Task: task(2), Samples: 2}, {Task: task(3), Group: 1, Samples: 2}}
	trs, _, err := Run(ctx, newScripted(t, 2), &fakeChat{}, factory(10, 1000, time.Second), reqs, opts())
	if err == nil {
		t.Fatal("no error after cancellation")
	}
	if len(trs) != 4 {
		t.Fatalf("%d trajectories returned, want 4", len(trs))
	}
	for _, tr := range trs {
		if tr.Stop != trajectory.StopCancelled {
			t.Fatalf("%s: stop %s", tr.ID, tr.Stop)
		}
	}
}

func TestRejectsImpossibleRequests(t *testing.T) {
	_, _, err := Run(context.Background(), newScripted(t, 2), &fakeChat{}, factory(3, 100, 0), []Request{{Task: task(1), Samples: 3}}, opts())
	if err == nil || !strings.Contains(err.Error(), "samples") {
		t.Fatalf("3 samples on 2 slots: %v", err)
	}
}
