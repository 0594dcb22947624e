package results

import (
	"bytes"
	"testing"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trainer/metric"
)

// The results table: one row per method, exact match per hop count, then
// EM and F1, three decimals.
func TestPrint(t *testing.T) {
	var b bytes.Buffer
	Print(&b, &Table{Methods: []string{"RL (grpo)"}, Hops: []int{1, 2},
		Metrics: map[string]map[string]float64{"RL (grpo)": {metric.EMHop(1): 0.5, metric.EMHop(2): 0.25, metric.EM: 0.375, metric.F1: 0.4}}}, nil)
	want := "\nResults (exact match on the evaluation split):\n\n" +
		"method                1-hop    2-hop       EM       F1\n" +
		"RL (grpo)             0.500    0.250    0.375    0.400\n"
	if b.String() != want {
		t.Errorf("Print =\n%q\nwant\n%q", b.String(), want)
	}
	// With an out-of-domain split, its EM is a last column, one word like
	// the others ("–" for a method not evaluated on it).
	b.Reset()
	Print(&b, &Table{Methods: []string{"Naive RAG", "RL (grpo)"}, Hops: []int{1},
		Metrics: map[string]map[string]float64{"Naive RAG": {metric.EMHop(1): 0.5, metric.EM: 0.5, metric.F1: 0.5}, "RL (grpo)": {metric.EMHop(1): 0.75, metric.EM: 0.75, metric.F1: 0.8}},
		OOD:     map[string]map[string]float64{"RL (grpo)": {metric.EM: 0.125}}}, nil)
	want = "\nResults (exact match on the evaluation split):\n\n" +
		"method                1-hop       EM       F1   OOD-EM\n" +
		"Naive RAG             0.500    0.500    0.500        –\n" +
		"RL (grpo)             0.750    0.750    0.800    0.125\n"
	if b.String() != want {
		t.Errorf("Print with OOD =\n%q\nwant\n%q", b.String(), want)
	}
	// With intervals, EM and OOD-EM are each followed by their 95%
	// interval's half width ("–" where there is none).
	b.Reset()
	Print(&b, &Table{Methods: []string{"Naive RAG", "RL (grpo)"}, Hops: []int{1},
		Metrics: map[string]map[string]float64{"Naive RAG": {metric.EMHop(1): 0.5, metric.EM: 0.5, metric.F1: 0.5}, "RL (grpo)": {metric.EMHop(1): 0.75, metric.EM: 0.75, metric.F1: 0.8}},
		OOD:     map[string]map[string]float64{"RL (grpo)": {metric.EM: 0.125}}},
		map[string]map[string]stat.Interval{"Naive RAG": {SplitInDomain: {Mean: 0.5, Lo: 0.4, Hi: 0.6}},
			"RL (grpo)": {SplitInDomain: {Mean: 0.75, Lo: 0.7, Hi: 0.8}, SplitOOD: {Mean: 0.125, Lo: 0.1, Hi: 0.15}}})
	want = "\nResults (exact match on the evaluation split):\n\n" +
		"method                1-hop       EM     95%       F1   OOD-EM     95%\n" +
		"Naive RAG             0.500    0.500  ±0.100    0.500        –       –\n" +
		"RL (grpo)             0.750    0.750  ±0.050    0.800    0.125  ±0.025\n" +
		"\n95%: half width of the 95% interval over the questions (one seed: training randomness not included; docs/experiments.md)\n"
	if b.String() != want {
		t.Errorf("Print with intervals =\n%q\nwant\n%q", b.String(), want)
	}
}
