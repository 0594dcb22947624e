package inspect

import (
	"database/sql"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/report"
	"github.com/agentrl/agentrl/trajectory"
)

// pageSize is the number of trajectories per page of the table.
const pageSize = 50

// filter is the trajectories table's query, read from the URL.
type filter struct {
	Iteration            string // "" for all
	Split                string
	Correct              string // "", "1" or "0"
	RewardMin, RewardMax string
	Stop                 string
	Tool                 string
	Turns                string
	Text                 string // searched in the question and the answer
	Sort                 string // a key of sortColumns
	Desc                 bool
	Page                 int // from 1
}

// sortColumns are the columns the table sorts by, by their URL name.
var sortColumns = map[string]string{
	"written":   "tid",
	"iteration": "iteration",
	"reward":    "reward",
	"turns":     "n_turns",
	"tokens":    "total_tokens",
	"duration":  "duration_ms",
}

// stops are the stop reasons, for the filter.
var stops = []trajectory.StopReason{trajectory.StopAnswer, trajectory.StopNoToolCall, trajectory.StopMaxTurns,
	trajectory.StopMaxTokens, trajectory.StopError, trajectory.StopCancelled}

// parseFilter reads and checks the filter parameters; a malformed one is
// an error naming it.
func parseFilter(q url.Values) (filter, error) {
	f := filter{Iteration: q.Get("iteration"), Split: q.Get("split"), Correct: q.Get("correct"),
		RewardMin: q.Get("reward_min"), RewardMax: q.Get("reward_max"), Stop: q.Get("stop"), Tool: q.Get("tool"),
		Turns: q.Get("turns"), Text: q.Get("q"), Sort: q.Get("sort"), Desc: q.Get("dir") == "desc", Page: 1}
	whole := func(name, v string) error {
		if v == "" {
			return nil
		}
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return fmt.Errorf("%s=%q: want a whole number ≥ 0", name, v)
		}
		return nil
	}
	real := func(name, v string) error {
		if v == "" {
			return nil
		}
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%s=%q: want a number", name, v)
		}
		return nil
	}
	if err := whole("iteration", f.Iteration); err != nil {
		return f, err
	}
	if err := whole("turns", f.Turns); err != nil {
		return f, err
	}
	if err := real("reward_min", f.RewardMin); err != nil {
		return f, err
	}
	if err := real("reward_max", f.RewardMax); err != nil {
		return f, err
	}
	switch f.Split {
	case "", string(trajectory.Train), string(trajectory.Eval):
	default:
		return f, fmt.Errorf("split=%q: want train or eval", f.Split)
	}
	switch f.Correct {
	case "", "0", "1":
	default:
		return f, fmt.Errorf("correct=%q: want 1 (correct) or 0 (wrong)", f.Correct)
	}
	if f.Stop != "" && !validStop(f.Stop) {
		return f, fmt.Errorf("stop=%q: want one of %v", f.Stop, stops)
	}
	if f.Sort == "" {
		f.Sort = "written"
	}
	if _, ok := sortColumns[f.Sort]; !ok {
		return f, fmt.Errorf("sort=%q: want written, iteration, reward, turns, tokens or duration", f.Sort)
	}
	if d := q.Get("dir"); d != "" && d != "asc" && d != "desc" {
		return f, fmt.Errorf("dir=%q: want asc or desc", d)
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return f, fmt.Errorf("page=%q: want a page number from 1", v)
		}
		f.Page = n
	}
	return f, nil
}

// validStop reports whether s names a stop reason.
func validStop(s string) bool {
	for _, r := range stops {
		if string(r) == s {
			return true
		}
	}
	return false
}

// where builds the filter's condition on the trajectories table and its
// arguments: every value a ? placeholder. With runIndex false the run's
// condition is written +run, which keeps SQLite from choosing an index
// that starts with run: scanning the table in tid order is then the plan.
func (f filter) where(run string, runIndex bool) (string, []any) {
	runCond := "run = ?"
	if !runIndex {
		runCond = "+run = ?"
	}
	conds, args := []string{runCond}, []any{run}
	add := func(cond string, vs ...any) { conds, args = append(conds, cond), append(args, vs...) }
	if f.Iteration != "" {
		n, _ := strconv.Atoi(f.Iteration)
		add("iteration = ?", n)
	}
	if f.Split != "" {
		add("split = ?", f.Split)
	}
	if f.Correct != "" {
		add("correct = ?", f.Correct == "1")
	}
	if f.RewardMin != "" {
		v, _ := strconv.ParseFloat(f.RewardMin, 64)
		add("reward >= ?", v)
	}
	if f.RewardMax != "" {
		v, _ := strconv.ParseFloat(f.RewardMax, 64)
		add("reward <= ?", v)
	}
	if f.Stop != "" {
		add("stop = ?", f.Stop)
	}
	if f.Turns != "" {
		n, _ := strconv.Atoi(f.Turns)
		add("n_turns = ?", n)
	}
	if f.Tool != "" {
		add("tid IN (SELECT tid FROM tool_calls WHERE tool = ?)", f.Tool)
	}
	if f.Text != "" {
		pat := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(f.Text) + "%"
		add(`(question LIKE ? ESCAPE '\' OR answer LIKE ? ESCAPE '\')`, pat, pat)
	}
	return strings.Join(conds, " AND "), args
}

// order is the filter's ORDER BY: the sort column, then the written
// order, in the chosen direction.
func (f filter) order() string {
	dir := " ASC"
	if f.Desc {
		dir = " DESC"
	}
	col := sortColumns[f.Sort]
	if col == "tid" {
		return "tid" + dir
	}
	return col + dir + ", tid" + dir
}

// query returns the URL query of the filter with some parameters
// changed ("" removes one).
func (f filter) query(change ...string) template.URL {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("iteration", f.Iteration)
	set("split", f.Split)
	set("correct", f.Correct)
	set("reward_min", f.RewardMin)
	set("reward_max", f.RewardMax)
	set("stop", f.Stop)
	set("tool", f.Tool)
	set("turns", f.Turns)
	set("q", f.Text)
	if f.Sort != "written" {
		set("sort", f.Sort)
	}
	if f.Desc {
		set("dir", "desc")
	}
	if f.Page > 1 {
		set("page", strconv.Itoa(f.Page))
	}
	for i := 0; i+1 < len(change); i += 2 {
		q.Del(change[i])
		set(change[i], change[i+1])
	}
	return template.URL("?" + q.Encode())
}

// listRow is one trajectory in the table.
type listRow struct {
	TID                    int64
	ID, Split, TaskID      string
	Iteration, Hops, Group int
	Sample, Turns, Tokens  int
	Question, Answer, Stop string
	Correct                bool
	Reward                 float64
	Duration               float64
}

// listPage shows one page of the run's trajectories that pass the filter.
type listPage struct {
	layout
	F          filter
	Rows       []listRow
	Total      int
	Pages      int
	First      int // the position of the first row shown, from 1
	Iterations []int
	Tools      []string
	Stops      []trajectory.StopReason
	Sorts      []string
	Prev, Next template.URL // "" at either end
	SortLinks  map[string]template.URL
}

// listPage handles /r/N/trajectories.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	rs := s.run(w, r)
	if rs == nil {
		return
	}
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	p := listPage{layout: layout{Title: rs.Label + ": trajectories", Run: rs, Nav: "trajectories"}, F: f, Stops: stops,
		Sorts: []string{"written", "iteration", "reward", "turns", "tokens", "duration"}, SortLinks: map[string]template.URL{}}
	name, err := rs.runName()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	if err := rs.fillList(&p, name); err != nil {
		s.fail(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	if f.Page > p.Pages {
		s.fail(w, r, http.StatusNotFound, "page %d: the %d trajectories that match fill %d", f.Page, p.Total, p.Pages)
		return
	}
	for _, k := range p.Sorts {
		desc := "desc"
		if f.Sort == k && f.Desc {
			desc = ""
		}
		p.SortLinks[k] = f.query("sort", k, "dir", desc, "page", "")
	}
	if f.Page > 1 {
		p.Prev = f.query("page", strconv.Itoa(f.Page-1))
	}
	if f.Page < p.Pages {
		p.Next = f.query("page", strconv.Itoa(f.Page+1))
	}
	render(w, http.StatusOK, "list", p)
}

// fillList runs the count and the page's query, and reads the filter's
// choices (iterations, tools), in one read transaction.
func (r *runSource) fillList(p *listPage, run string) error {
	tx, err := r.st.ReadOnlyDB().Begin()
	if err != nil {
		return fmt.Errorf("list trajectories of %s: %w", r.Path, err)
	}
	defer tx.Rollback()
	// Plans for a large store (BenchmarkPages). The count reads the
	// run's index when it alone decides (no filter, or an iteration's
	// rows), and otherwise scans the table once, which beats looking up
	// every row of the run through an index. The page follows an index on
	// run only to an iteration's rows or in reward order; else it reads the
	// table in tid order and stops after the page.
	f := p.F
	unfiltered := f == filter{Sort: f.Sort, Desc: f.Desc, Page: f.Page}
	where, args := f.where(run, unfiltered || f.Iteration != "")
	if err := tx.QueryRow("SELECT COUNT(*) FROM trajectories WHERE "+where, args...).Scan(&p.Total); err != nil {
		return fmt.Errorf("count trajectories of %s: %w", r.Path, err)
	}
	where, args = f.where(run, f.Iteration != "" || f.Sort == "reward")
	p.Pages = max(1, (p.Total+pageSize-1)/pageSize)
	p.First = (p.F.Page-1)*pageSize + 1
	rows, err := tx.Query(`SELECT tid, id, iteration, split, task_id, hops, group_idx, sample_idx, question, answer,
		correct, reward, stop, n_turns, total_tokens, duration_ms FROM trajectories WHERE `+where+
		" ORDER BY "+p.F.order()+" LIMIT ? OFFSET ?", append(args, pageSize, (p.F.Page-1)*pageSize)...)
	if err != nil {
		return fmt.Errorf("list trajectories of %s: %w", r.Path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var x listRow
		var reward, dur sql.NullFloat64
		if err := rows.Scan(&x.TID, &x.ID, &x.Iteration, &x.Split, &x.TaskID, &x.Hops, &x.Group, &x.Sample, &x.Question,
			&x.Answer, &x.Correct, &reward, &x.Stop, &x.Turns, &x.Tokens, &dur); err != nil {
			return fmt.Errorf("list trajectories of %s: %w", r.Path, err)
		}
		x.Reward, x.Duration = orNaN(reward), orNaN(dur)
		x.Question, x.Answer = report.Clip(x.Question, 160), report.Clip(x.Answer, 80)
		p.Rows = append(p.Rows, x)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list trajectories of %s: %w", r.Path, err)
	}
	if p.Iterations, err = ints(tx, "SELECT iteration FROM iterations WHERE run = ? ORDER BY iteration", run); err != nil {
		return fmt.Errorf("iterations of %s: %w", r.Path, err)
	}
	if p.Tools, err = strs(tx, toolsSQL); err != nil {
		return fmt.Errorf("tools of %s: %w", r.Path, err)
	}
	return nil
}

// toolsSQL lists the distinct tool names in order, jumping from one to the
// next through the index on tool_calls(tool): a few index lookups, where
// SELECT DISTINCT would read every call.
const toolsSQL = `WITH RECURSIVE t(tool) AS (
    SELECT MIN(tool) FROM tool_calls WHERE tool > ''
    UNION ALL
    SELECT (SELECT MIN(tool) FROM tool_calls WHERE tool > t.tool) FROM t WHERE t.tool IS NOT NULL
)
SELECT tool FROM t WHERE tool IS NOT NULL`
