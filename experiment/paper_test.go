package experiment

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/results"
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
	for in, want := range map[string]string{"REINFORCE++": "paper-reinforcepp-s2", "PPO w/o loss mask": "paper-ppo-w-o-loss-mask-s2", "sft": "paper-sft-s2",
		"PPO λ=0.95 w/o advantage mask": "paper-ppo-lambda-0-95-w-o-advantage-mask-s2"} {
		if got := runName(in, 2); got != want {
			t.Fatalf("runName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkdownTable(t *testing.T) {
	iv := stat.Interval{Mean: 0.75, Lo: 0.7, Hi: 0.8}
	avg := meanStd([]float64{0.75})
	avg.Interval = &iv
	tab := &Table{Methods: []string{"GRPO"}, Hops: []int{2, 1}, EM: map[string]map[string]Cell{
		"GRPO": {"hop1": meanStd([]float64{1}), "hop2": meanStd([]float64{0.5, 0.7}), "avg": avg}}}
	md := tab.Markdown()
	for _, want := range []string{"| Method | Seeds | 1-hop EM | 2-hop EM | Avg EM |", "| GRPO | 1 | 1.000 | 0.600 | 0.750 [0.700, 0.800] |"} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Searches") {
		t.Errorf("a table without behaviour has a behaviour table:\n%s", md)
	}
	// With the behaviour read, a second table: each method's searches per
	// episode and its shares in percent, means over the seeds.
	tab.Behaviour = map[string]results.Behaviour{"GRPO": meanBehaviour([]results.Behaviour{
		{Episodes: 200, Searches: 1, MultiHop1: 1, Evidence: 0.5, AnswerInResult: 0.5},
		{Episodes: 200, Searches: 2, MultiHop2: 0.5, MultiHop3: 0.25, Evidence: 0.75, AnswerInResult: 0.7, NoSearch: 0.1}})}
	md = tab.Markdown()
	want := "| GRPO | 1.50 | 50.0% / 25.0% / 12.5% | 62.5% | 60.0% | 5.0% |"
	if !strings.Contains(md, "| Method | Searches | Multi-hop: 1 / 2 / 3+ searches | Multi-hop evidence | Answer in a result | No search |") || !strings.Contains(md, want) {
		t.Errorf("markdown lacks the behaviour row %q:\n%s", want, md)
	}
}

// Every row's overrides apply to the default config and give a valid run;
// the paper's rows are there with their estimator, masks and lambda; an
// ablation names an earlier row; the first run of a seed evaluates the
// baselines, the others do not.
func TestSpecConfigs(t *testing.T) {
	type want struct {
		est            string
		advMask, lMask bool
		lambda         float64
	}
	wants := map[string]want{
		"PPO":                                    {"gae", true, true, 1},
		"GRPO":                                   {"grpo", true, true, 1},
		"REINFORCE++":                            {"reinforce_pp", true, true, 1},
		"RLOO":                                   {"rloo", true, true, 1},
		"PPO w/o advantage mask":                 {"gae", false, true, 1},
		"PPO w/o loss mask":                      {"gae", true, false, 1},
		"PPO λ=0.95":                             {"gae", true, true, 0.95},
		"PPO λ=0.95 w/o advantage mask":          {"gae", false, true, 0.95},
		"PPO + process rewards":                  {"gae", true, true, 1},
		"GRPO w/o std + process rewards":         {"grpo", true, true, 1},
		"PPO + process rewards, 80 its":          {"gae", true, true, 1},
		"GRPO w/o std + process rewards, 80 its": {"grpo", true, true, 1},
		"PPO + process rewards, near-miss, 80 its": {"gae", true, true, 1},
	}
	names := map[string]bool{}
	for i, s := range PaperSpecs {
		names[s.Name] = true
		c, err := specConfig(config.Default(), s, 3, "runs/sft", i == 0)
		if err != nil {
			t.Fatal(err)
		}
		a := c.Algorithm
		if w, ok := wants[s.Name]; ok && (a.Estimator != w.est || a.AdvantageMask != w.advMask || a.LossMask != w.lMask || a.Lambda != w.lambda) {
			t.Errorf("%s: estimator %s, advantage mask %v, loss mask %v, lambda %v; want %+v", s.Name, a.Estimator, a.AdvantageMask, a.LossMask, a.Lambda, w)
		}
		if c.Run.Seed != 3 || c.Model.Path != "runs/sft" || c.Eval.Baselines != (i == 0) || c.Run.Name != runName(s.Name, 3) {
			t.Errorf("%s: run %+v, model %q, baselines %v", s.Name, c.Run, c.Model.Path, c.Eval.Baselines)
		}
		its := 60
		if strings.HasSuffix(s.Name, ", 80 its") {
			its = 80
		}
		if nearMiss := strings.Contains(s.Name, "near-miss"); a.NearMiss != nearMiss || nearMiss && a.NearMissSamples != 2 {
			t.Errorf("%s: algorithm.near_miss %v with %d samples; want true with 2 exactly where the name says near-miss", s.Name, a.NearMiss, a.NearMissSamples)
		}
		if process := c.Env.Rewards.Support == 0.3 && c.Run.Iterations == its; process != s.Process {
			t.Errorf("%s: env.rewards.support %v, run.iterations %d; want 0.3 and 60 (80 where the name says so) exactly on the process-reward rows", s.Name,
				c.Env.Rewards.Support, c.Run.Iterations)
		}
		if s.Ablates != "" && !names[s.Ablates] {
			t.Errorf("%s ablates %q, not an earlier row", s.Name, s.Ablates)
		}
	}
	for name := range wants {
		if !names[name] {
			t.Errorf("no row %q", name)
		}
	}
	bad := Spec{Name: "broken", Set: []string{"algorithm.no_such_key=1"}}
	if _, err := specConfig(config.Default(), bad, 1, "", true); err == nil || !strings.Contains(err.Error(), "row broken") {
		t.Errorf("a row with an unknown key: err = %v", err)
	}
}

func TestMarkdownOODColumn(t *testing.T) {
	tab := &Table{Methods: []string{"Naive RAG", "PPO"}, Hops: []int{1}, EM: map[string]map[string]Cell{
		"Naive RAG": {"hop1": meanStd([]float64{0.2}), "avg": meanStd([]float64{0.2}), "ood": meanStd([]float64{0.05})},
		"PPO":       {"hop1": meanStd([]float64{0.6}), "avg": meanStd([]float64{0.6})}}}
	md := tab.Markdown()
	for _, want := range []string{"| Method | Seeds | 1-hop EM | Avg EM | OOD EM |", "|---|---:|---:|---:|---:|", "| Naive RAG | 1 | 0.200 | 0.200 | 0.050 |", "| PPO | 1 | 0.600 | 0.600 | – |"} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// The claims on hand-made outcomes, two seeds of four questions, worked
// by hand (d = A − c·B per question, then the mean):
//
//	Naive RAG 1000 / 0100; PPO 1110 / 1101; Base Tool Call 0000 / 0000;
//	PPO w/o loss mask = PPO.
//	PPO − RAG: 0110 / 1001, 0.5 in each seed;
//	PPO − 2.5·RAG: (−1.5, 1, 1, 0) / (1, −1.5, 0, 1), 0.125 in each seed;
//	RAG − Base: 0.25 in each seed;
//	PPO − PPO w/o loss mask: 0 everywhere, so every resample is 0: the
//	interval is [0, 0] and the claim is undecided, ahead in no seed.
//
// No row has out-of-domain outcomes, so the out-of-domain claim is left
// out, as are the claims of rows without outcomes.
func TestClaims(t *testing.T) {
	in := results.SplitInDomain
	o := func(a, b []float64) map[string]map[int][]float64 {
		return map[string]map[int][]float64{in: {1: a, 2: b}}
	}
	ppo := o([]float64{1, 1, 1, 0}, []float64{1, 1, 0, 1})
	tab := &Table{Seeds: []int{1, 2}, Outcomes: map[string]map[string]map[int][]float64{
		"Naive RAG":         o([]float64{1, 0, 0, 0}, []float64{0, 1, 0, 0}),
		"Base Tool Call":    o([]float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}),
		"PPO":               ppo,
		"PPO w/o loss mask": ppo,
	}}
	cs, err := tab.Claims()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		prefix  string
		perSeed float64
	}{{"PPO is above naive RAG in-domain", 0.5}, {"PPO reaches 2.5x naive RAG in-domain", 0.125},
		{"Base Tool Call is below Naive RAG", 0.25}, {"PPO is ahead of PPO w/o loss mask", 0}}
	if len(cs) != len(want) {
		t.Fatalf("%d claims, want %d: %+v", len(cs), len(want), cs)
	}
	for i, w := range want {
		c := cs[i]
		if !strings.HasPrefix(c.Text, w.prefix) || len(c.PerSeed) != 2 || c.N != 4 ||
			math.Abs(c.PerSeed[0]-w.perSeed) > 1e-12 || math.Abs(c.PerSeed[1]-w.perSeed) > 1e-12 || math.Abs(c.Interval.Mean-w.perSeed) > 1e-12 {
			t.Errorf("claim %d: %+v, want %q with %v per seed over 4 questions", i, c, w.prefix, w.perSeed)
		}
	}
	if md := cs[3].Markdown(); md != "PPO is ahead of PPO w/o loss mask in-domain: +0.000 [+0.000, +0.000] (paired bootstrap, 2 seeds × 4 questions): "+
		"**undecided**. Per seed (1, 2): +0.000, +0.000; ahead in 0 of 2." {
		t.Errorf("claim renders as %q", md)
	}
	if cs[0].Ahead() != 2 || cs[1].Ahead() != 2 {
		t.Errorf("ahead in %d and %d seeds, want 2 and 2", cs[0].Ahead(), cs[1].Ahead())
	}
	// Each seed its own questions (one world per seed): seed 2 has two
	// questions, and PPO − RAG is 0.5 in seed 1 and 1 in seed 2. The mean
	// is that of the seed means, 0.75 (pooled it would be 4/6), the claim
	// counts the 6 questions and says its bootstrap is two-stage.
	nested := &Table{Seeds: []int{1, 2}, Nested: map[string]bool{in: true}, Outcomes: map[string]map[string]map[int][]float64{
		"Naive RAG": o([]float64{1, 0, 0, 0}, []float64{0, 0}),
		"PPO":       o([]float64{1, 1, 1, 0}, []float64{1, 1}),
	}}
	ncs, err := nested.Claims()
	if err != nil {
		t.Fatal(err)
	}
	if c := ncs[0]; !c.Nested || c.N != 6 || math.Abs(c.Interval.Mean-0.75) > 1e-12 || c.PerSeed[1] != 1 ||
		!strings.Contains(c.Markdown(), "(paired two-stage bootstrap, 2 seeds, 6 questions, each seed's its own)") {
		t.Errorf("nested claim %+v renders as %q, want mean 0.75 over 6 questions, two-stage", c, c.Markdown())
	}
	tab.Outcomes["PPO w/o loss mask"] = o([]float64{1, 1, 1}, []float64{1, 1, 0})
	if _, err := tab.Claims(); err == nil || !strings.Contains(err.Error(), "3 questions against 4") && !strings.Contains(err.Error(), "4 questions against 3") {
		t.Errorf("rows with different questions: %v, want an error", err)
	}
}

// The claims of a row with process rewards (amendment 11) on hand-made
// outcomes, two seeds, worked by hand (d = A − c·B per question, then the
// mean over seeds):
//
//	in-domain: Naive RAG 1000 / 0100, Base Tool Call 1000 / 0000,
//	P 1110 / 1101: P − RAG 0110 / 1001, 0.5 and 0.5; P − Base 0110 / 1101,
//	0.5 and 0.75, mean 0.625;
//	multi-hop: Base 10 / 00, P 11 / 01: P − 2·Base (−1, 1) / (0, 1), 0 and
//	0.5, mean 0.25;
//	out of domain: RAG 01 / 00, P 01 / 10: 0 and 0.5, mean 0.25.
//
// Before them comes the protocol's claim on the baselines (RAG − Base: 0
// and 0.25); the rows without outcomes have no claims.
func TestProcessClaims(t *testing.T) {
	o := func(in1, in2, mh1, mh2, ood1, ood2 []float64) map[string]map[int][]float64 {
		m := map[string]map[int][]float64{results.SplitInDomain: {1: in1, 2: in2}}
		if mh1 != nil {
			m[results.SplitMultiHop] = map[int][]float64{1: mh1, 2: mh2}
		}
		if ood1 != nil {
			m[results.SplitOOD] = map[int][]float64{1: ood1, 2: ood2}
		}
		return m
	}
	p := "PPO + process rewards"
	tab := &Table{Seeds: []int{1, 2}, Outcomes: map[string]map[string]map[int][]float64{
		results.NaiveRAG:     o([]float64{1, 0, 0, 0}, []float64{0, 1, 0, 0}, nil, nil, []float64{0, 1}, []float64{0, 0}),
		results.BaseToolCall: o([]float64{1, 0, 0, 0}, []float64{0, 0, 0, 0}, []float64{1, 0}, []float64{0, 0}, nil, nil),
		p:                    o([]float64{1, 1, 1, 0}, []float64{1, 1, 0, 1}, []float64{1, 1}, []float64{0, 1}, []float64{0, 1}, []float64{1, 0}),
	}}
	cs, err := tab.Claims()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		text    string
		split   string
		n       int
		perSeed [2]float64
	}{
		{"Base Tool Call is below Naive RAG in-domain (Naive RAG − Base Tool Call)", results.SplitInDomain, 4, [2]float64{0, 0.25}},
		{p + " is above naive RAG in-domain", results.SplitInDomain, 4, [2]float64{0.5, 0.5}},
		{p + " is above Base Tool Call in-domain", results.SplitInDomain, 4, [2]float64{0.5, 0.75}},
		{p + " reaches 2x Base Tool Call's multi-hop EM (" + p + " − 2 × Base Tool Call, 2- and 3-hop questions)", results.SplitMultiHop, 2, [2]float64{0, 0.5}},
		{p + " is not below naive RAG out of domain (fails only when its interval is below 0)", results.SplitOOD, 2, [2]float64{0, 0.5}},
	}
	if len(cs) != len(want) {
		t.Fatalf("%d claims, want %d: %+v", len(cs), len(want), cs)
	}
	for i, w := range want {
		c := cs[i]
		mean := (w.perSeed[0] + w.perSeed[1]) / 2
		if c.Text != w.text || c.Split != w.split || c.N != w.n || len(c.PerSeed) != 2 || math.Abs(c.PerSeed[0]-w.perSeed[0]) > 1e-12 ||
			math.Abs(c.PerSeed[1]-w.perSeed[1]) > 1e-12 || math.Abs(c.Interval.Mean-mean) > 1e-12 {
			t.Errorf("claim %d: %+v\nwant %q on %s, %v per seed over %d questions", i, c, w.text, w.split, w.perSeed, w.n)
		}
	}
}

// The core rows run on every seed, the others on the other seeds, the
// Extra rows only when asked for; the first row is core (its run
// evaluates the baselines of every seed).
func TestRows(t *testing.T) {
	specs, on := Rows([]int{1, 2, 3, 4, 5}, []int{1, 2, 3}, false, nil)
	if specs[0].Name != "PPO" || !specs[0].Core {
		t.Fatalf("first row %+v, want core PPO", specs[0])
	}
	for _, s := range specs {
		if s.Extra {
			t.Errorf("extra row %s without extra", s.Name)
		}
		want := []int{1, 2, 3}
		if s.Core {
			want = []int{1, 2, 3, 4, 5}
		}
		if !slices.Equal(on[s.Name], want) {
			t.Errorf("%s on seeds %v, want %v", s.Name, on[s.Name], want)
		}
	}
	core := 0
	for _, s := range PaperSpecs {
		if s.Core {
			core++
		}
	}
	if core != 11 || len(specs) != 14 {
		t.Errorf("%d core RL rows and %d rows, want 11 (PPO, GRPO, REINFORCE++, the two mask ablations, GRPO w/o std normalisation, "+
			"the five with process rewards) and 14", core, len(specs))
	}
	// Amendment 17: on ten seeds PPO and the rows at 80 iterations run on
	// all of them, the other core rows on the first five, the rest on the
	// other seeds.
	ten := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	_, on10 := Rows(ten, []int{1, 2, 3}, false, nil)
	for _, s := range PaperSpecs {
		want := []int{1, 2, 3}
		switch {
		case s.Extra:
			want = nil
		case s.Name == "PPO" || strings.HasSuffix(s.Name, "80 its"):
			want = ten
		case s.Core:
			want = ten[:5]
		}
		if !slices.Equal(on10[s.Name], want) {
			t.Errorf("ten seeds: %s on %v, want %v", s.Name, on10[s.Name], want)
		}
	}
	all, _ := Rows([]int{4}, []int{1, 2, 3}, true, nil)
	if len(all) != 11 {
		t.Errorf("seed 4 alone, with extra: %d rows, want the 11 core ones", len(all))
	}
	if all, _ := Rows([]int{1}, nil, true, nil); len(all) != len(PaperSpecs) {
		t.Errorf("with extra: %d rows, want all %d", len(all), len(PaperSpecs))
	}
}

// TestRowsOnly: --rows keeps the rows it names, in table order, each on
// its own seeds; a name that is not a row, one given twice, and one that
// runs on none of the seeds are refused by name.
func TestRowsOnly(t *testing.T) {
	ten := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	only := []string{"GRPO w/o std + process rewards, 80 its", "PPO"}
	specs, on := Rows(ten, []int{1, 2, 3}, false, only)
	if len(specs) != 2 || specs[0].Name != "PPO" || specs[1].Name != only[0] {
		t.Fatalf("rows %v, want PPO then %q", specs, only[0])
	}
	if !slices.Equal(on["PPO"], ten) || !slices.Equal(on[only[0]], ten) || len(on) != 2 {
		t.Errorf("seeds %v, want both rows on all ten and no other row", on)
	}
	if err := checkSeeds(ten, []int{1, 2, 3}, false, only); err != nil {
		t.Errorf("valid rows refused: %v", err)
	}
	for _, c := range []struct {
		rows []string
		want string
	}{
		{[]string{"PPO", "PPPO"}, `"PPPO" is not a row of the table`},
		{[]string{"PPO", "PPO"}, `"PPO" is given twice`},
		{[]string{"GiGPO"}, `"GiGPO" runs on none of these seeds`},
		{[]string{"RLOO"}, `"RLOO" runs on none of these seeds`},
	} {
		err := checkSeeds(ten, []int{11}, false, c.rows)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rows %q: %v, want an error with %q", c.rows, err, c.want)
		}
	}
}
