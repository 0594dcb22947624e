// Package inspect is the web app behind `trainer inspect`: a local server
// over one or several trajectory stores, opened read-only, with pages for
// the runs (the report's curves and results, refreshed while a run is
// live), a filterable table of trajectories, one trajectory (conversation,
// tool calls, reward components, tokens coloured by mask, advantage,
// logprob, training/rollout ratio or entropy, and the other samples of its
// question) and a read-only SQL box. Pages are plain HTML with a little
// vanilla JavaScript, embedded in the binary; every query is
// parameterised, and nothing in the app can write to a store.
package inspect

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/agentrl/agentrl/internal/localorigin"
	"github.com/agentrl/agentrl/trainer/store"
)

// Source is one store to serve.
type Source struct {
	Label string // the run's name in the pages (its folder's name)
	Path  string // the store file
	// Decode turns one token id into its text for the token view; nil
	// shows the ids.
	Decode func(id int32) string
}

// Server serves the app. Its methods are safe for concurrent use.
type Server struct {
	// Host is the address the server listens on: requests must name it or
	// a loopback host, and browser requests from other origins (but links
	// followed) are refused (localorigin.Check). "" is this machine only.
	Host string
	runs []*runSource
	mux  *http.ServeMux
}

// runSource is a served store.
type runSource struct {
	Source
	Index int // the run's number in the URLs (/r/N/...)
	st    *store.Store

	mu      sync.Mutex
	name    string           // the run's name in the store, once it has one
	decoded map[int32]string // Decode's results
}

// New opens every source's store read-only and builds the app. A store
// that is missing, is not a store or holds several runs is an error
// naming it.
func New(sources []Source) (*Server, error) {
	if len(sources) == 0 {
		return nil, errors.New("inspect: no store given")
	}
	s := &Server{}
	for i, src := range sources {
		st, err := store.OpenReadOnly(src.Path)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("inspect: %w", err)
		}
		s.runs = append(s.runs, &runSource{Source: src, Index: i, st: st, decoded: map[int32]string{}})
		if _, err := s.runs[i].runName(); err != nil {
			s.Close()
			return nil, fmt.Errorf("inspect: %w", err)
		}
	}
	s.routes()
	return s, nil
}

// Close closes the stores.
func (s *Server) Close() error {
	var errs []error
	for _, r := range s.runs {
		errs = append(errs, r.st.Close())
	}
	return errors.Join(errs...)
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := localorigin.Check(r, s.Host); err != nil {
		s.fail(w, r, http.StatusForbidden, "%v", err)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// routes registers the pages; anything else is a 404 page.
func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.runsPage)
	m.HandleFunc("GET /chart/{n}", s.chartPNG)
	m.HandleFunc("GET /api/state", s.state)
	m.HandleFunc("GET /r/{run}/{$}", s.runRedirect)
	m.HandleFunc("GET /r/{run}/trajectories", s.listPage)
	m.HandleFunc("GET /r/{run}/t/{tid}", s.trajectoryPage)
	m.HandleFunc("GET /r/{run}/sql", s.sqlPage)
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(staticFS)))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.fail(w, r, http.StatusMethodNotAllowed, "method %s: the app only reads", r.Method)
			return
		}
		s.fail(w, r, http.StatusNotFound, "no page at %s", r.URL.Path)
	})
	s.mux = m
}

// run resolves the {run} path value: a run's position in the list. An
// unknown one has been answered with a 404 page, and run returns nil.
func (s *Server) run(w http.ResponseWriter, r *http.Request) *runSource {
	v := r.PathValue("run")
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= len(s.runs) {
		s.fail(w, r, http.StatusNotFound, "no run %q: this app serves runs 0 to %d", v, len(s.runs)-1)
		return nil
	}
	return s.runs[i]
}

// runRedirect sends /r/N/ to the run's trajectories.
func (s *Server) runRedirect(w http.ResponseWriter, r *http.Request) {
	if rs := s.run(w, r); rs != nil {
		http.Redirect(w, r, fmt.Sprintf("/r/%d/trajectories", rs.Index), http.StatusFound)
	}
}

// runName returns the name of the store's run ("" while it has none yet:
// a run that has just started). A store of several runs is an error.
func (r *runSource) runName() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.name != "" {
		return r.name, nil
	}
	rows, err := r.st.ReadOnlyDB().Query("SELECT name FROM runs ORDER BY name LIMIT 2")
	if err != nil {
		return "", fmt.Errorf("runs of %s: %w", r.Path, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return "", fmt.Errorf("runs of %s: %w", r.Path, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("runs of %s: %w", r.Path, err)
	}
	if len(names) > 1 {
		return "", fmt.Errorf("%s holds several runs; inspect serves stores of one run (each run's own store.db)", r.Path)
	}
	if len(names) == 1 {
		r.name = names[0]
	}
	return r.name, nil
}

// token returns the text of token id: Decode's, cached, or the id.
func (r *runSource) token(id int32) string {
	if r.Decode == nil {
		return "⟨" + strconv.Itoa(int(id)) + "⟩"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.decoded[id]
	if !ok {
		s = r.Decode(id)
		r.decoded[id] = s
	}
	return s
}
