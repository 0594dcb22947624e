package trainer

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/results"
)

// The per-question outcomes read back from the store are the ones the
// run's table averaged: for every method and split, their mean is the EM
// the loop computed, over the 6 evaluation (eval.max_eval) and 4
// out-of-domain questions.
func TestReadOutcomesMatchTheTable(t *testing.T) {
	res, storePath, _ := runToEnd(t, smallConfig(t.TempDir()))
	o, err := results.ReadOutcomes(storePath, res.RL())
	if err != nil {
		t.Fatal(err)
	}
	if len(o) != 3 {
		t.Fatalf("outcomes for %d methods, want naive RAG, base tool call and RL", len(o))
	}
	for _, m := range res.Methods {
		for split, want := range map[string]struct {
			em float64
			n  int
		}{results.SplitInDomain: {res.Metrics[m][metric.EM], 6}, results.SplitOOD: {res.OOD[m][metric.EM], 4}} {
			v, err := o.Vector(m, split, nil)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, x := range v {
				sum += x
			}
			if len(v) != want.n || math.Abs(sum/float64(len(v))-want.em) > 1e-9 {
				t.Errorf("%s %s: %d outcomes averaging %v, want %d averaging the table's %v", m, split, len(v), sum/float64(len(v)), want.n, want.em)
			}
		}
	}
	// The multi-hop split is the in-domain questions of 2 hops (the world's
	// most), with the same outcomes, averaging the table's em_hop2.
	for _, m := range res.Methods {
		mh := o[m][results.SplitMultiHop]
		sum := 0.0
		for id, x := range mh {
			if y, ok := o[m][results.SplitInDomain][id]; !ok || y != x {
				t.Errorf("%s: multi-hop question %s outcome %v, in-domain %v (%v)", m, id, x, y, ok)
			}
			sum += x
		}
		if want := res.Metrics[m][metric.EMHop(2)]; len(mh) == 0 || math.Abs(sum/float64(len(mh))-want) > 1e-9 {
			t.Errorf("%s: %d multi-hop outcomes averaging %v, want the table's 2-hop EM %v", m, len(mh), sum/float64(len(mh)), want)
		}
	}
	if iv := o.Intervals()[res.RL()][results.SplitInDomain]; !(iv.Lo <= iv.Mean && iv.Mean <= iv.Hi) {
		t.Errorf("RL interval %+v does not hold its mean", iv)
	}
	if _, err := o.Vector("Naive RAG", results.SplitInDomain, []string{"no-such-task"}); err == nil {
		t.Error("a question with no outcome gave no error")
	}
}
