package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
)

// evalPrefix starts the metric keys of evaluation results.
const evalPrefix = metric.Eval

// lastEval returns the last iteration that logged a finite evaluation
// metric and its evaluation metrics (keys starting with "eval/") sorted by
// key; ok is false when no iteration did.
func lastEval(iters []store.IterationMetrics) (iter int, keys []string, vals []float64, ok bool) {
	for i := len(iters) - 1; i >= 0 && !ok; i-- {
		for k, v := range iters[i].Metrics {
			if strings.HasPrefix(k, evalPrefix) && !math.IsNaN(v) && !math.IsInf(v, 0) {
				iter, ok = iters[i].Iteration, true
				break
			}
		}
	}
	if !ok {
		return 0, nil, nil, false
	}
	for _, it := range iters {
		if it.Iteration != iter {
			continue
		}
		for k := range it.Metrics {
			if strings.HasPrefix(k, evalPrefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			vals = append(vals, it.Metrics[k])
		}
	}
	return iter, keys, vals, true
}

// hopTable is the evaluation accuracy of one iteration by number of hops,
// computed from the eval trajectories.
type hopTable struct {
	iteration int
	rows      []hopRow // by hops, ascending
	all       hopRow   // every eval trajectory of the iteration
	hasF1     bool     // some trajectory carries an "f1" reward component
}

// hopRow is the accuracy over the eval trajectories with some hop count.
type hopRow struct {
	hops int
	n    int
	em   float64 // mean exact match
	f1   float64 // mean F1 over the trajectories that have it, NaN when none
}

// hopSQL averages, per hop count and overall, the exact match of the eval
// trajectories of one iteration: the "em" reward component when the
// trajectory has one, else the store's own match against the gold answers
// (the correct column); and the "f1" component where present. The overall
// row has NULL hops and sorts last.
const hopSQL = `WITH e AS (
    SELECT hops,
           COALESCE(json_extract(components, '$.em'), correct) AS em,
           json_extract(components, '$.f1') AS f1
    FROM trajectories
    WHERE run = ? AND split = 'eval' AND iteration = ?
)
SELECT hops, COUNT(*), AVG(em), AVG(f1) FROM e GROUP BY hops
UNION ALL
SELECT NULL, COUNT(*), AVG(em), AVG(f1) FROM e
ORDER BY hops NULLS LAST`

// readHopTable computes the hop table of the last iteration that has eval
// trajectories; the table has no rows when there is none.
func readHopTable(path, run string, iters []store.IterationMetrics) (hopTable, error) {
	t := hopTable{}
	found := false
	for i := len(iters) - 1; i >= 0 && !found; i-- {
		if iters[i].NEval > 0 {
			t.iteration, found = iters[i].Iteration, true
		}
	}
	if !found {
		return t, nil
	}
	_, rows, err := store.QueryReadOnly(path, hopSQL, run, t.iteration)
	if err != nil {
		return t, fmt.Errorf("report: eval accuracy by hops of iteration %d: %w", t.iteration, err)
	}
	for _, v := range rows {
		r := hopRow{n: int(asFloat(v[1])), em: asFloat(v[2]), f1: asFloat(v[3])}
		t.hasF1 = t.hasF1 || !math.IsNaN(r.f1)
		if v[0] == nil {
			t.all = r
			continue
		}
		r.hops = int(asFloat(v[0]))
		t.rows = append(t.rows, r)
	}
	return t, nil
}
