// Package results holds a run's final table: the evaluation figures of
// the baselines and of the trained policy, read from its store, and their
// printout.
package results

import (
	"fmt"
	"io"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
)

// The baselines' names as the tables print them: the warm-started model
// answering from the passages retrieved for the question (naive RAG), and
// calling the tools itself before any RL (the base tool-calling model).
const (
	NaiveRAG     = "Naive RAG"
	BaseToolCall = "Base Tool Call"
)

// Table is the final evaluation figures of a run, by method.
type Table struct {
	Methods []string                      // in table order
	Metrics map[string]map[string]float64 // method -> eval metrics (em, f1, em_hop1, ...)
	OOD     map[string]map[string]float64 // method -> the same on the out-of-domain split (none without one)
	Hops    []int
}

// Rename names the row of method from to: its figures, out-of-domain
// ones and place in the table. A table without from is left as it is.
func (t *Table) Rename(from, to string) {
	m, ok := t.Metrics[from]
	if !ok {
		return
	}
	delete(t.Metrics, from)
	t.Metrics[to] = m
	if o, ok := t.OOD[from]; ok {
		delete(t.OOD, from)
		t.OOD[to] = o
	}
	for i, name := range t.Methods {
		if name == from {
			t.Methods[i] = to
		}
	}
}

// Read reads the final table of a finished run from its store:
// the naive-RAG and base-tool-call baselines (iteration 0) and the policy's
// last evaluation, named rl.
func Read(storePath, rl string) (*Table, error) {
	s, err := store.OpenReadOnly(storePath)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ms, err := s.Metrics()
	if err != nil {
		return nil, err
	}
	return Of(ms, rl), nil
}

// Of makes the table from a run's stored metrics: the naive-RAG and
// base-tool-call baselines from iteration 0, and the last evaluation after
// it as rl.
func Of(ms []store.IterationMetrics, rl string) *Table {
	r := &Table{Metrics: map[string]map[string]float64{}, OOD: map[string]map[string]float64{}}
	pickPrefix := func(m map[string]float64, prefix string) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			if len(k) > len(prefix) && k[:len(prefix)] == prefix {
				out[k[len(prefix):]] = v
			}
		}
		return out
	}
	ood := func(method string, m map[string]float64, prefix string) {
		if o := pickPrefix(m, prefix); len(o) > 0 {
			r.OOD[method] = o
		}
	}
	var last map[string]float64
	for _, it := range ms {
		if it.Iteration == 0 {
			if rag := pickPrefix(it.Metrics, metric.NaiveRAG); len(rag) > 0 {
				r.Methods = append(r.Methods, NaiveRAG)
				r.Metrics[NaiveRAG] = rag
				ood(NaiveRAG, it.Metrics, metric.NaiveRAGOOD)
			}
			r.Methods = append(r.Methods, BaseToolCall)
			r.Metrics[BaseToolCall] = pickPrefix(it.Metrics, metric.Eval)
			ood(BaseToolCall, it.Metrics, metric.EvalOOD)
		} else if _, ok := it.Metrics[metric.Eval+metric.EM]; ok {
			last = it.Metrics
		}
	}
	if last != nil {
		r.Methods = append(r.Methods, rl)
		r.Metrics[rl] = pickPrefix(last, metric.Eval)
		ood(rl, last, metric.EvalOOD)
	}
	for h := 1; h <= 4; h++ {
		for _, mm := range r.Metrics {
			if _, ok := mm[metric.EMHop(h)]; ok {
				r.Hops = append(r.Hops, h)
				break
			}
		}
	}
	return r
}

// Print prints the final table: exact match per hop count and on
// average, per method, and on the out-of-domain split when there is one.
// With intervals (ReadOutcomes(...).Intervals(); nil for none), EM and
// OOD-EM are each followed by the half width of their 95% interval.
func Print(w io.Writer, r *Table, intervals map[string]map[string]stat.Interval) {
	half := func(method, split string) string {
		iv, ok := intervals[method][split]
		if !ok {
			return "–"
		}
		return fmt.Sprintf("±%.3f", (iv.Hi-iv.Lo)/2)
	}
	fmt.Fprintf(w, "\nResults (exact match on the evaluation split):\n\n%-18s", "method")
	for _, h := range r.Hops {
		fmt.Fprintf(w, " %8s", fmt.Sprintf("%d-hop", h))
	}
	fmt.Fprintf(w, " %8s", "EM")
	if intervals != nil {
		fmt.Fprintf(w, " %7s", "95%")
	}
	fmt.Fprintf(w, " %8s", "F1")
	if len(r.OOD) > 0 {
		fmt.Fprintf(w, " %8s", "OOD-EM")
		if intervals != nil {
			fmt.Fprintf(w, " %7s", "95%")
		}
	}
	fmt.Fprintln(w)
	for _, m := range r.Methods {
		mm := r.Metrics[m]
		fmt.Fprintf(w, "%-18s", m)
		for _, h := range r.Hops {
			fmt.Fprintf(w, " %8.3f", mm[metric.EMHop(h)])
		}
		fmt.Fprintf(w, " %8.3f", mm[metric.EM])
		if intervals != nil {
			fmt.Fprintf(w, " %7s", half(m, SplitInDomain))
		}
		fmt.Fprintf(w, " %8.3f", mm[metric.F1])
		if len(r.OOD) > 0 {
			if o, ok := r.OOD[m]; ok {
				fmt.Fprintf(w, " %8.3f", o[metric.EM])
			} else {
				fmt.Fprintf(w, " %8s", "–")
			}
			if intervals != nil {
				fmt.Fprintf(w, " %7s", half(m, SplitOOD))
			}
		}
		fmt.Fprintln(w)
	}
	if intervals != nil {
		fmt.Fprintln(w, "\n95%: half width of the 95% interval over the questions (one seed: training randomness not included; docs/experiments.md)")
	}
}

// RL is the table's last row (the RL run's), "" for none.
func (r *Table) RL() string {
	if len(r.Methods) == 0 {
		return ""
	}
	return r.Methods[len(r.Methods)-1]
}
