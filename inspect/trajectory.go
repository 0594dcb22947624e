package inspect

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"sort"
	"strconv"

	"github.com/agentrl/agentrl/report"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// trajPage shows one trajectory.
type trajPage struct {
	layout
	TID          int64
	T            *trajectory.Trajectory
	Conversation template.HTML
	Components   []component
	Calls        []callRow
	Modes        []colorMode
	Tokens       template.JS // the token view's data, JSON
	Group        []groupRow
}

// component is one reward component.
type component struct {
	Name  string
	Value float64
}

// callRow is one tool call in the calls table.
type callRow struct {
	Turn, Call                     int
	Tool, Args, Result, ParseError string
	OK                             bool
	Latency                        float64
}

// colorMode is a way to colour the tokens; a mode whose array is not
// stored is shown disabled.
type colorMode struct {
	Key, Label string
	Stored     bool
}

// groupRow is one sample of the same question in the same iteration.
type groupRow struct {
	TID              int64
	ID, Answer, Stop string
	Sample, Turns    int
	Correct, Current bool
	Reward           float64
}

// trajectoryPage handles /r/N/t/TID.
func (s *Server) trajectoryPage(w http.ResponseWriter, r *http.Request) {
	rs := s.run(w, r)
	if rs == nil {
		return
	}
	v := r.PathValue("tid")
	tid, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "trajectory %q: want its number (the tid column)", v)
		return
	}
	t, err := rs.st.GetByKey(tid)
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "no trajectory %d in run %s", tid, rs.Label)
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	p := trajPage{layout: layout{Title: rs.Label + ": " + t.ID, Run: rs, Nav: "trajectories"}, TID: tid, T: t}
	if p.Conversation, err = report.Conversation(t, "trajectory "+t.ID, t.Correct); err != nil {
		s.fail(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	for k, v := range t.Components {
		p.Components = append(p.Components, component{k, v})
	}
	sort.Slice(p.Components, func(i, j int) bool { return p.Components[i].Name < p.Components[j].Name })
	for i, u := range t.Turns {
		for j, c := range u.Calls {
			p.Calls = append(p.Calls, callRow{Turn: i, Call: j, Tool: c.Name, Args: report.Clip(c.Args, 2000), Result: report.Clip(c.Result, 4000),
				ParseError: c.ParseError, OK: c.OK, Latency: c.LatencyMS})
		}
	}
	tv := rs.tokenView(t)
	p.Modes = tv.modes()
	b, err := json.Marshal(tv)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "token view of %s: %v", t.ID, err)
		return
	}
	p.Tokens = template.JS(b) // json.Marshal escapes <, > and &: safe inside <script>
	name, err := rs.runName()
	if err == nil {
		p.Group, err = rs.group(name, t, tid)
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	render(w, http.StatusOK, "trajectory", p)
}

// tokenView is what the page's script colours: each token's text, mask
// bit and turn, and the per-token values of each colouring (null where a
// value does not apply: the logprob-based ones off the action tokens).
type tokenView struct {
	Text   []string         `json:"text"`
	Mask   []int            `json:"mask"`
	Turn   []int16          `json:"turn"`
	Values map[string][]any `json:"values"` // by colour mode; absent when not stored
}

// Colour modes, as the page's select names them.
const (
	modeMask      = "mask"
	modeAdvantage = "advantage"
	modeLogprob   = "logprob"
	modeRatio     = "ratio"
	modeEntropy   = "entropy"
)

// modes lists the colourings in the select's order, marking those whose
// values are stored.
func (v tokenView) modes() []colorMode {
	out := []colorMode{{modeMask, "action mask", true}}
	for _, m := range []colorMode{
		{Key: modeAdvantage, Label: "advantage"},
		{Key: modeLogprob, Label: "behaviour logprob"},
		{Key: modeRatio, Label: "training / rollout probability ratio"},
		{Key: modeEntropy, Label: "entropy"},
	} {
		_, m.Stored = v.Values[m.Key]
		out = append(out, m)
	}
	return out
}

// tokenView builds the token view of t. The ratio is
// exp(train_logprob - logprob) on the action tokens: the probability the
// training forward gave the sampled token over the one the rollout did.
func (r *runSource) tokenView(t *trajectory.Trajectory) tokenView {
	n := len(t.Tokens)
	v := tokenView{Text: make([]string, n), Mask: make([]int, n), Turn: t.TurnOf, Values: map[string][]any{}}
	for i, id := range t.Tokens {
		v.Text[i] = r.token(id)
		if i < len(t.Mask) {
			v.Mask[i] = int(t.Mask[i])
		}
	}
	action := func(i int) bool { return i < len(t.Mask) && t.Mask[i] == 1 }
	values := func(have bool, f func(i int) (float64, bool)) []any {
		if !have {
			return nil
		}
		out := make([]any, n)
		for i := range out {
			if x, ok := f(i); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
				out[i] = x
			}
		}
		return out
	}
	set := func(key string, vals []any) {
		if vals != nil {
			v.Values[key] = vals
		}
	}
	set(modeAdvantage, values(len(t.Advantages) == n && n > 0, func(i int) (float64, bool) {
		return float64(t.Advantages[i]), true
	}))
	set(modeLogprob, values(len(t.Logprobs) == n && n > 0, func(i int) (float64, bool) {
		return float64(t.Logprobs[i]), action(i)
	}))
	set(modeRatio, values(len(t.Logprobs) == n && len(t.TrainLogprobs) == n && n > 0, func(i int) (float64, bool) {
		return math.Exp(float64(t.TrainLogprobs[i]) - float64(t.Logprobs[i])), action(i)
	}))
	set(modeEntropy, values(len(t.Entropies) == n && n > 0, func(i int) (float64, bool) {
		return float64(t.Entropies[i]), action(i)
	}))
	return v
}

// group reads the samples of t's question in t's iteration and split
// (its GRPO group, and at iteration 0 the naive-RAG baseline's answer).
func (r *runSource) group(run string, t *trajectory.Trajectory, tid int64) ([]groupRow, error) {
	rows, err := r.st.ReadOnlyDB().Query(`SELECT tid, id, sample_idx, answer, correct, reward, stop, n_turns
		FROM trajectories WHERE run = ? AND iteration = ? AND split = ? AND dataset = ? AND task_id = ?
		ORDER BY group_idx, sample_idx, id`, run, t.Iteration, string(t.Split), t.Dataset, t.TaskID)
	if err != nil {
		return nil, fmt.Errorf("group of %s in %s: %w", t.ID, r.Path, err)
	}
	defer rows.Close()
	var out []groupRow
	for rows.Next() {
		var g groupRow
		var reward sql.NullFloat64
		if err := rows.Scan(&g.TID, &g.ID, &g.Sample, &g.Answer, &g.Correct, &reward, &g.Stop, &g.Turns); err != nil {
			return nil, fmt.Errorf("group of %s in %s: %w", t.ID, r.Path, err)
		}
		g.Reward, g.Current, g.Answer = orNaN(reward), g.TID == tid, report.Clip(g.Answer, 200)
		out = append(out, g)
	}
	return out, rows.Err()
}
