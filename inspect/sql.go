package inspect

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/agentrl/agentrl/report"
	"github.com/agentrl/agentrl/trainer/store"
)

// SQL box limits: rows shown, the bytes their values may take, and time a
// query may take.
const (
	sqlMaxRows  = 1000
	sqlMaxBytes = 32 << 20
	sqlTimeout  = 10 * time.Second
)

// sqlPage shows the SQL box, the example queries and a query's result.
type sqlPage struct {
	layout
	Query     string
	Examples  []example
	Cols      []string
	Rows      [][]string
	Ran       bool // a query ran: show its result, even when empty
	Truncated bool
	Error     string
	Took      string
}

// sqlPage handles /r/N/sql?q=QUERY: the query runs read-only on a
// connection of its own, so statements that would write are refused (as
// `trainer rollouts sql` refuses them), with a 400 status, and nothing it
// does outlives it.
func (s *Server) sqlPage(w http.ResponseWriter, r *http.Request) {
	rs := s.run(w, r)
	if rs == nil {
		return
	}
	p := sqlPage{layout: layout{Title: rs.Label + ": SQL", Run: rs, Nav: "sql"}, Query: r.URL.Query().Get("q"), Examples: examples}
	status := http.StatusOK
	if strings.TrimSpace(p.Query) != "" {
		ctx, cancel := context.WithTimeout(r.Context(), sqlTimeout)
		defer cancel()
		start := time.Now()
		cols, rows, truncated, err := rs.st.QueryLimit(ctx, p.Query, sqlMaxRows, sqlMaxBytes)
		if err != nil {
			p.Error, status = err.Error(), http.StatusBadRequest
		} else {
			p.Ran, p.Cols, p.Truncated = true, cols, truncated
			p.Took = time.Since(start).Round(time.Microsecond).String()
			for _, row := range rows {
				cells := make([]string, len(row))
				for i, v := range row {
					cells[i] = report.Clip(store.Cell(v), 2000)
				}
				p.Rows = append(p.Rows, cells)
			}
		}
	}
	render(w, status, "sql", p)
}
