package experiment

import (
	"math"
	"strings"
	"testing"
)

// Mean and sample standard deviation by hand: {0.7, 0.8, 0.9} has mean 0.8
// and sample variance (0.01 + 0 + 0.01)/2 = 0.01, std 0.1.
func TestMeanStd(t *testing.T) {
	c := meanStd([]float64{0.7, 0.8, 0.9})
	if math.Abs(c.Mean-0.8) > 1e-12 || math.Abs(c.Std-0.1) > 1e-12 || c.N != 3 || len(c.Values) != 3 {
		t.Fatalf("%+v", c)
	}
	if one := meanStd([]float64{0.5}); one.Std != 0 || one.String() != "0.500" {
		t.Fatalf("one seed: %+v %q", one, one.String())
	}
	if c.String() != "0.800 ± 0.100" {
		t.Fatalf("cell renders as %q", c.String())
	}
}

func TestRunNames(t *testing.T) {
	for in, want := range map[string]string{"REINFORCE++": "paper-reinforcepp-s2", "PPO w/o loss mask": "paper-ppo-w-o-loss-mask-s2", "sft": "paper-sft-s2"} {
		if got := runName(in, 2); got != want {
			t.Fatalf("runName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkdownTable(t *testing.T) {
	tab := &Table{Methods: []string{"GRPO"}, Hops: []int{2, 1}, EM: map[string]map[string]Cell{
		"GRPO": {"hop1": meanStd([]float64{1}), "hop2": meanStd([]float64{0.5, 0.7}), "avg": meanStd([]float64{0.75})}}}
	md := tab.Markdown()
	for _, want := range []string{"| Method | 1-hop EM | 2-hop EM | Avg EM |", "| GRPO | 1.000 | 0.600 ± 0.141 | 0.750 |"} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md)
		}
	}
}
