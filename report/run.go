package report

import (
	"fmt"
	"math"
	"os"

	"github.com/agentrl/agentrl/trainer/store"
)

// runData is everything a report shows about one run.
type runData struct {
	path    string // the store
	label   string // the run's name in legends and table headers
	info    runInfo
	iters   []store.IterationMetrics
	hops    hopTable // eval EM by hops at the last iteration with eval trajectories
	samples []sample
}

// runInfo is the run's row of the runs table.
type runInfo struct {
	name, config, gitRev, startedAt, resumedAt string
	resumes                                    int
}

// loadRun reads a run's report data from the store at path, which must
// exist (opening a missing path would create an empty store) and hold
// exactly one run.
func loadRun(path string) (*runData, error) {
	return readRun(path, true)
}

// readRun reads a run's report data, with its sample trajectories when
// withSamples is set.
func readRun(path string, withSamples bool) (*runData, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("report: store %s: %w", path, err)
	}
	info, err := readRunInfo(path)
	if err != nil {
		return nil, err
	}
	s, err := store.OpenReadOnly(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer s.Close()
	r := &runData{path: path, label: info.name, info: info}
	if r.iters, err = s.Metrics(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if r.hops, err = readHopTable(path, info.name, r.iters); err != nil {
		return nil, err
	}
	if !withSamples {
		return r, nil
	}
	if r.samples, err = pickSamples(s, r.iters); err != nil {
		return nil, fmt.Errorf("report on %s: %w", path, err)
	}
	return r, nil
}

// readRunInfo reads the runs table (through the store's read-only query,
// as the Store API has no accessor for it).
func readRunInfo(path string) (runInfo, error) {
	_, rows, err := store.QueryReadOnly(path,
		"SELECT name, config, git_rev, started_at, resumed_at, resumes FROM runs ORDER BY name")
	if err != nil {
		return runInfo{}, fmt.Errorf("report: %w", err)
	}
	switch len(rows) {
	case 0:
		return runInfo{}, fmt.Errorf("report: store %s holds no run", path)
	case 1:
	default:
		return runInfo{}, fmt.Errorf("report: store %s holds %d runs, want one", path, len(rows))
	}
	v := rows[0]
	return runInfo{name: asString(v[0]), config: asString(v[1]), gitRev: asString(v[2]),
		startedAt: asString(v[3]), resumedAt: asString(v[4]), resumes: int(asFloat(v[5]))}, nil
}

// asString reads a TEXT value of QueryReadOnly; NULL gives "".
func asString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// asFloat reads a numeric value of QueryReadOnly; NULL (how the store
// keeps NaN) and anything else gives NaN.
func asFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return math.NaN()
}
