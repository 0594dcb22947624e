package reward

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestExactMatch(t *testing.T) {
	cases := []struct {
		pred, gold string
		want       float64
	}{
		{"the Beatles", "Beatles", 1},      // article dropped
		{"BEATLES!", "beatles", 1},         // case and punctuation
		{"  Beatles  ", "Beatles", 1},      // whitespace
		{"Beatle", "Beatles", 0},           // different word
		{"The Beatles band", "Beatles", 0}, // extra word
		{"the", "a", 1},                    // both normalise to "": the official script says equal
	}
	for _, c := range cases {
		if got := ExactMatch(c.pred, c.gold); got != c.want {
			t.Errorf("ExactMatch(%q, %q) = %v, want %v", c.pred, c.gold, got, c.want)
		}
	}
}

func TestF1(t *testing.T) {
	cases := []struct {
		pred, gold string
		want       float64
	}{
		// pred [quick brown fox], gold [quick fox jumps]: 2 shared,
		// P = 2/3, R = 2/3, F1 = 2/3.
		{"the quick brown fox", "quick fox jumps", 2.0 / 3},
		// pred [new york city], gold [new york]: 2 shared, P = 2/3, R = 1,
		// F1 = 2*(2/3)/(5/3) = 4/5.
		{"New York City", "New York", 0.8},
		// pred [paris paris paris], gold [paris france]: the multiset
		// intersection holds one paris, P = 1/3, R = 1/2, F1 = (1/3)/(5/6) = 2/5.
		{"paris paris paris", "Paris, France", 0.4},
		{"The Eiffel Tower.", "eiffel tower", 1}, // identical after normalisation
		{"London", "Paris", 0},                   // nothing shared
		// yes/no rule: "no" vs "no way" would be P=1, R=1/2, F1=2/3 without it.
		{"no", "no way", 0},
		{"yes it is", "yes", 0}, // gold is special and differs
		{"Yes.", "yes", 1},      // equal after normalisation
		{"noanswer", "no answer", 0},
		{"the", "a", 0}, // both empty: no shared token
	}
	for _, c := range cases {
		if got := F1(c.pred, c.gold); !near(got, c.want) {
			t.Errorf("F1(%q, %q) = %v, want %v", c.pred, c.gold, got, c.want)
		}
	}
}

func TestSubstringMatch(t *testing.T) {
	cases := []struct {
		pred, gold string
		want       float64
	}{
		{"It was the Eiffel Tower, in Paris", "Eiffel Tower", 1}, // "it was eiffel tower in paris" contains "eiffel tower"
		{"Eiffel", "Eiffel Tower", 0},                            // gold longer than the prediction
		{"Stuttgart", "art", 1},                                  // plain substring, as Agent-R1 does
		{"anything at all", "The", 0},                            // gold normalises to "": never matches
	}
	for _, c := range cases {
		if got := SubstringMatch(c.pred, c.gold); got != c.want {
			t.Errorf("SubstringMatch(%q, %q) = %v, want %v", c.pred, c.gold, got, c.want)
		}
	}
}

func TestBestOverAliases(t *testing.T) {
	golds := []string{"Barack Obama", "Obama"}
	if got := Best(ExactMatch, "obama", golds); got != 1 {
		t.Errorf("EM over aliases = %v, want 1 (second alias)", got)
	}
	// "president obama" vs "barack obama": 1 shared, P = R = 1/2, F1 = 1/2;
	// vs "obama": P = 1/2, R = 1, F1 = 2*(1/2)/(3/2) = 2/3. The max is 2/3.
	if got := Best(F1, "President Obama", golds); !near(got, 2.0/3) {
		t.Errorf("F1 over aliases = %v, want 2/3", got)
	}
	if got := Best(ExactMatch, "obama", nil); got != 0 {
		t.Errorf("no gold answers: got %v, want 0", got)
	}
}

func TestMetricByName(t *testing.T) {
	for _, n := range []string{NameEM, NameF1, NameSubstringEM} {
		if _, err := MetricByName(n); err != nil {
			t.Errorf("MetricByName(%q): %v", n, err)
		}
	}
	m, _ := MetricByName(NameF1)
	if got := m("New York City", "New York"); !near(got, 0.8) {
		t.Errorf("f1 by name scored %v, want 0.8", got)
	}
	if _, err := MetricByName("bleu"); err == nil {
		t.Error("unknown metric accepted")
	}
}
