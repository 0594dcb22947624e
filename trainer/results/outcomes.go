package results

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trainer/store"
)

// The splits of Outcomes: the in-domain evaluation split and the
// out-of-domain one.
const (
	SplitInDomain = "in-domain"
	SplitOOD      = "ood"
	// SplitMultiHop is the in-domain questions of two hops or more, also
	// counted under SplitInDomain.
	SplitMultiHop = "multi-hop"
)

// Outcomes are a run's per-question exact-match outcomes (1 right, 0
// wrong) at its final evaluations, read back from its store: method ->
// split (SplitInDomain, SplitMultiHop or SplitOOD) -> task ID -> outcome. The methods
// are Read's: "Naive RAG" and "Base Tool Call" from iteration 0,
// and the RL row (named as Read was told) from the last evaluated
// iteration after it.
type Outcomes map[string]map[string]map[string]float64

// ReadOutcomes reads the outcomes of the store's evaluation episodes.
// An episode stored in segments counts as right when any segment is.
func ReadOutcomes(storePath, rl string) (Outcomes, error) {
	_, rows, err := store.QueryReadOnly(storePath,
		"SELECT iteration, id, task_id, MAX(correct), MAX(hops) FROM trajectories WHERE split = 'eval' GROUP BY iteration, task_id, "+
			"CASE WHEN id LIKE '%-eval-rag-ood-%' THEN 3 WHEN id LIKE '%-eval-rag-%' THEN 2 WHEN id LIKE '%-eval-ood-%' THEN 1 ELSE 0 END")
	if err != nil {
		return nil, err
	}
	last := 0
	for _, r := range rows {
		if it, _ := strconv.Atoi(fmt.Sprint(r[0])); it > last {
			last = it
		}
	}
	out := Outcomes{}
	for _, r := range rows {
		it, err := strconv.Atoi(fmt.Sprint(r[0]))
		if err != nil {
			return nil, fmt.Errorf("%s: iteration %v: %w", storePath, r[0], err)
		}
		rest := strings.TrimPrefix(fmt.Sprint(r[1]), fmt.Sprintf("%d-eval-", it))
		rag := strings.HasPrefix(rest, "rag-")
		rest = strings.TrimPrefix(rest, "rag-")
		split := SplitInDomain
		if strings.HasPrefix(rest, "ood-") {
			split = SplitOOD
		}
		method, ok := evalMethod(it, last, rag, rl)
		if !ok {
			continue
		}
		correct, err := strconv.ParseFloat(fmt.Sprint(r[3]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: correct %v: %w", storePath, r[3], err)
		}
		hops, err := strconv.Atoi(fmt.Sprint(r[4]))
		if err != nil {
			return nil, fmt.Errorf("%s: hops %v: %w", storePath, r[4], err)
		}
		out.add(method, split, fmt.Sprint(r[2]), correct)
		if split == SplitInDomain && hops >= 2 {
			out.add(method, SplitMultiHop, fmt.Sprint(r[2]), correct)
		}
	}
	return out, nil
}

// add records a method's outcome of question id on split.
func (o Outcomes) add(method, split, id string, correct float64) {
	if o[method] == nil {
		o[method] = map[string]map[string]float64{}
	}
	if o[method][split] == nil {
		o[method][split] = map[string]float64{}
	}
	o[method][split][id] = correct
}

// evalMethod names the method an evaluation episode of iteration it
// belongs to, last being the store's last evaluated iteration and rag
// saying the episode is naive RAG's: "Naive RAG" and "Base Tool Call" at
// iteration 0, rl at last. It is not any method's (ok false) at another
// iteration, nor as a naive-RAG pass after iteration 0.
func evalMethod(it, last int, rag bool, rl string) (method string, ok bool) {
	switch {
	case it == 0 && rag:
		return NaiveRAG, true
	case it == 0:
		return BaseToolCall, true
	case rag || it != last:
		return "", false
	}
	return rl, true
}

// Vector is one method's outcomes on a split in the order of ids (sorted
// task IDs when ids is nil), with an error naming a missing question.
func (o Outcomes) Vector(method, split string, ids []string) ([]float64, error) {
	m := o[method][split]
	if ids == nil {
		for id := range m {
			ids = append(ids, id)
		}
		sort.Strings(ids)
	}
	v := make([]float64, len(ids))
	for i, id := range ids {
		x, ok := m[id]
		if !ok {
			return nil, fmt.Errorf("%s has no %s outcome for question %s", method, split, id)
		}
		v[i] = x
	}
	return v, nil
}

// Intervals are the 95% intervals of one run's methods (one seed: the
// question term of stat.CrossedSE only): method -> split -> interval.
func (o Outcomes) Intervals() map[string]map[string]stat.Interval {
	out := map[string]map[string]stat.Interval{}
	for method, splits := range o {
		for split := range splits {
			v, err := o.Vector(method, split, nil)
			if err != nil || len(v) == 0 {
				continue
			}
			iv, err := stat.CrossedInterval([][]float64{v})
			if err != nil {
				continue
			}
			if out[method] == nil {
				out[method] = map[string]stat.Interval{}
			}
			out[method][split] = iv
		}
	}
	return out
}
