package inspect

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/report"
)

// runsPage shows the runs: a row each, and the report's charts and results
// tables of the selected ones (overlaid when several).
type runsPage struct {
	layout
	Runs    []runRow
	Several bool // more than one run is served: show the selection
	Charts  []chartRef
	Tables  []report.Table
	Message string // why there are no charts
	State   string // the stores' state when rendered, for the live refresh
}

// runRow is one run in the runs table.
type runRow struct {
	Index        int
	Label, Path  string
	Name         string // the run's name in its store, "" before it has one
	Iterations   int
	Last         string // the last iteration, "" when none
	Trajectories int
	Updated      string // when the last iteration was written
	Selected     bool
}

// chartRef is a chart on the page, its image served by /chart/N.
type chartRef struct{ Title, Src string }

// runsPage handles /: ?run=N (repeated) selects the runs to draw, all by
// default.
func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	sel, err := s.selection(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	p := runsPage{layout: layout{Title: "Runs", Nav: "runs"}, Several: len(s.runs) > 1}
	var states []string
	chosen := map[int]bool{}
	for _, i := range sel {
		chosen[i] = true
	}
	for _, rs := range s.runs {
		row, state, err := rs.summary()
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, "%v", err)
			return
		}
		row.Selected = chosen[rs.Index]
		p.Runs = append(p.Runs, row)
		states = append(states, state)
	}
	p.State = strings.Join(states, ";")
	v, err := s.view(sel)
	if err != nil {
		p.Message = err.Error()
	} else {
		p.Tables = v.Tables
		q := selectionQuery(sel, p.State)
		for i, c := range v.Charts {
			p.Charts = append(p.Charts, chartRef{Title: c.Title, Src: fmt.Sprintf("/chart/%d.png?%s", i, q)})
		}
		if len(v.Charts) == 0 {
			p.Message = "No metrics stored yet."
		}
	}
	render(w, http.StatusOK, "runs", p)
}

// selection reads the run=N parameters: every run when there are none.
func (s *Server) selection(q url.Values) ([]int, error) {
	vs := q["run"]
	if len(vs) == 0 {
		sel := make([]int, len(s.runs))
		for i := range sel {
			sel[i] = i
		}
		return sel, nil
	}
	var sel []int
	seen := map[int]bool{}
	for _, v := range vs {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= len(s.runs) {
			return nil, fmt.Errorf("run=%q: want a run number from 0 to %d", v, len(s.runs)-1)
		}
		if !seen[i] {
			sel, seen[i] = append(sel, i), true
		}
	}
	return sel, nil
}

// selectionQuery is the query string of a chart image: the runs, and the
// state so that a new iteration gives a new URL.
func selectionQuery(sel []int, state string) string {
	q := url.Values{}
	for _, i := range sel {
		q.Add("run", strconv.Itoa(i))
	}
	q.Set("v", state)
	return q.Encode()
}

// view loads the report's view of the selected runs.
func (s *Server) view(sel []int) (*report.View, error) {
	var paths, labels []string
	for _, i := range sel {
		rs := s.runs[i]
		name, err := rs.runName()
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, fmt.Errorf("run %s has not started writing its store yet", rs.Label)
		}
		paths, labels = append(paths, rs.Path), append(labels, rs.Label)
	}
	return report.LoadView(paths, labels)
}

// summary reads a run's row of the runs table, and its state: what
// changes when an iteration is written.
func (r *runSource) summary() (runRow, string, error) {
	row := runRow{Index: r.Index, Label: r.Label, Path: r.Path}
	name, err := r.runName()
	if err != nil || name == "" {
		return row, "", err
	}
	row.Name = name
	var last sql.NullInt64
	var trajs sql.NullInt64
	var updated sql.NullString
	err = r.st.ReadOnlyDB().QueryRow(`SELECT COUNT(*), MAX(iteration), SUM(n_train + n_eval), MAX(created_at)
		FROM iterations WHERE run = ?`, name).Scan(&row.Iterations, &last, &trajs, &updated)
	if err != nil {
		return row, "", fmt.Errorf("iterations of %s: %w", r.Path, err)
	}
	if last.Valid {
		row.Last = strconv.FormatInt(last.Int64, 10)
	}
	row.Trajectories, row.Updated = int(trajs.Int64), updated.String
	return row, fmt.Sprintf("%d:%s", row.Iterations, row.Updated), nil
}

// chartPNG handles /chart/N.png: chart N of the selected runs' view.
func (s *Server) chartPNG(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("n"), ".png"))
	if err != nil || n < 0 {
		s.fail(w, r, http.StatusNotFound, "no chart %q", r.PathValue("n"))
		return
	}
	sel, err := s.selection(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	v, err := s.view(sel)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, "%v", err)
		return
	}
	if n >= len(v.Charts) {
		s.fail(w, r, http.StatusNotFound, "no chart %d: the runs have %d", n, len(v.Charts))
		return
	}
	b, err := v.Charts[n].PNG()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Write(b)
}

// state handles /api/state: the stores' state, which the runs page polls
// to refresh itself when a live run writes an iteration.
func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	var states []string
	for _, rs := range s.runs {
		_, st, err := rs.summary()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		states = append(states, st)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"state": strings.Join(states, ";")})
}
