package stat

import "testing"

// A difference that is the same on every seed and question has no
// spread: the interval is that value, and the claim holds.
func TestPairedBootstrapConstant(t *testing.T) {
	d := [][]float64{{0.3, 0.3, 0.3}, {0.3, 0.3, 0.3}}
	iv, err := PairedBootstrap(d, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !near(iv.Mean, 0.3, 1e-12) || !near(iv.Lo, 0.3, 1e-12) || !near(iv.Hi, 0.3, 1e-12) || iv.Verdict() != "holds" {
		t.Errorf("%+v (%s), want [0.3, 0.3], holds", iv, iv.Verdict())
	}
}

// Seeds resampled: three seeds whose differences are 0.1, 0.2, 0.3 on
// every question. A resample's mean is the mean of 3 seeds drawn with
// replacement; it is 0.1 with probability 1/27 = 3.7% (all three the
// first seed), above the 2.5% tail, so the 2.5th percentile is 0.1 and,
// alike, the 97.5th is 0.3.
func TestPairedBootstrapResamplesSeeds(t *testing.T) {
	d := [][]float64{{0.1, 0.1, 0.1, 0.1}, {0.2, 0.2, 0.2, 0.2}, {0.3, 0.3, 0.3, 0.3}}
	iv, err := PairedBootstrap(d, 10000, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !near(iv.Mean, 0.2, 1e-12) || !near(iv.Lo, 0.1, 1e-12) || !near(iv.Hi, 0.3, 1e-12) {
		t.Errorf("%+v, want 0.2 in [0.1, 0.3]", iv)
	}
}

// Questions resampled: one seed, 400 questions, half +1 and half -1. The
// mean of a resample of 400 has standard deviation sqrt(1/400) = 0.05,
// so the interval is about ±1.96·0.05 = ±0.098 around 0: undecided.
func TestPairedBootstrapResamplesQuestions(t *testing.T) {
	row := make([]float64, 400)
	for q := range row {
		row[q] = float64(1 - 2*(q%2))
	}
	iv, err := PairedBootstrap([][]float64{row}, 10000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !near(iv.Lo, -0.098, 0.012) || !near(iv.Hi, 0.098, 0.012) || iv.Verdict() != "undecided" {
		t.Errorf("%+v (%s), want about [-0.098, 0.098], undecided", iv, iv.Verdict())
	}
	again, _ := PairedBootstrap([][]float64{row}, 10000, 3)
	if again != iv {
		t.Errorf("same seed, another interval: %+v then %+v", iv, again)
	}
}

// A paired difference of 0/1 outcomes: row A right on 60 of 100
// questions where B is right on 40 of them (A ⊇ B), in 2 seeds. d is
// 1 on 20 questions, 0 elsewhere: mean 0.2, and no resample can go
// below 0, so the claim holds; mirrored, it fails.
func TestPairedBootstrapVerdicts(t *testing.T) {
	mk := func(sign float64) [][]float64 {
		d := make([][]float64, 2)
		for s := range d {
			d[s] = make([]float64, 100)
			for q := 40; q < 60; q++ {
				d[s][q] = sign
			}
		}
		return d
	}
	up, err := PairedBootstrap(mk(1), 2000, 5)
	if err != nil {
		t.Fatal(err)
	}
	down, _ := PairedBootstrap(mk(-1), 2000, 5)
	// SE of the mean of 100 draws of a 0/1 value with p = 0.2: 0.04.
	if !near(up.Mean, 0.2, 1e-12) || up.Verdict() != "holds" || !near(up.Lo, 0.2-1.96*0.04, 0.02) || !near(up.Hi, 0.2+1.96*0.04, 0.02) {
		t.Errorf("A ahead: %+v (%s), want about 0.2 ± 0.078, holds", up, up.Verdict())
	}
	if down.Verdict() != "fails" || !near(down.Mean, -0.2, 1e-12) {
		t.Errorf("A behind: %+v (%s), want fails", down, down.Verdict())
	}
	if _, err := PairedBootstrap(mk(1), 10, 5); err == nil {
		t.Error("10 resamples accepted")
	}
	if _, err := PairedBootstrap([][]float64{{1}, {1, 0}}, 100, 5); err == nil {
		t.Error("ragged grid accepted")
	}
}

// Seeds resampled, each with its own number of questions: differences
// 0.1, 0.2, 0.3 on every question of seeds of 4, 2 and 7 questions. A
// question resample of a constant seed is that constant, so, as in
// TestPairedBootstrapResamplesSeeds, the interval is [0.1, 0.3] (all
// three draws the first seed has probability 1/27 = 3.7% > 2.5%). The
// mean is the mean of the seed means, 0.2, not the pooled 2.5/13.
func TestNestedBootstrapResamplesSeeds(t *testing.T) {
	d := [][]float64{{0.1, 0.1, 0.1, 0.1}, {0.2, 0.2}, {0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3}}
	iv, err := NestedBootstrap(d, 10000, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !near(iv.Mean, 0.2, 1e-12) || !near(iv.Lo, 0.1, 1e-12) || !near(iv.Hi, 0.3, 1e-12) {
		t.Errorf("%+v, want 0.2 in [0.1, 0.3]", iv)
	}
}

// Questions resampled within a seed: one seed, 400 questions, half +1 and
// half -1, as in TestPairedBootstrapResamplesQuestions: about ±0.098,
// undecided, and the same interval again from the same seed. With four
// such seeds of other questions, the seed means are all 0, so only the
// question draws spread the mean: SD sqrt(1/400)/sqrt(4) = 0.025, about
// ±0.049.
func TestNestedBootstrapResamplesQuestions(t *testing.T) {
	row := make([]float64, 400)
	for q := range row {
		row[q] = float64(1 - 2*(q%2))
	}
	iv, err := NestedBootstrap([][]float64{row}, 10000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !near(iv.Lo, -0.098, 0.012) || !near(iv.Hi, 0.098, 0.012) || iv.Verdict() != "undecided" {
		t.Errorf("%+v (%s), want about [-0.098, 0.098], undecided", iv, iv.Verdict())
	}
	if again, _ := NestedBootstrap([][]float64{row}, 10000, 3); again != iv {
		t.Errorf("same seed, another interval: %+v then %+v", iv, again)
	}
	four, _ := NestedBootstrap([][]float64{row, row, row, row}, 10000, 3)
	if !near(four.Lo, -0.049, 0.008) || !near(four.Hi, 0.049, 0.008) {
		t.Errorf("four seeds: %+v, want about [-0.049, 0.049]", four)
	}
	if _, err := NestedBootstrap([][]float64{row}, 10, 3); err == nil {
		t.Error("10 resamples accepted")
	}
	if _, err := NestedBootstrap([][]float64{row, {}}, 100, 3); err == nil {
		t.Error("a seed without questions accepted")
	}
}
