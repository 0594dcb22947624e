package algo

import (
	"fmt"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// drawOf makes a draw function from hand-made draws: draws[d][g] are the
// outcome rewards of group g of draw d, numbered on across draws.
func drawOf(draws [][][]float64) (Draw, *int) {
	calls := 0
	return func(d int) ([]*trajectory.Trajectory, error) {
		calls++
		if d >= len(draws) {
			return nil, fmt.Errorf("draw %d past the %d prepared", d, len(draws))
		}
		var trs []*trajectory.Trajectory
		for g, rs := range draws[d] {
			for s, r := range rs {
				trs = append(trs, &trajectory.Trajectory{Group: d*len(draws[d]) + g, Sample: s, Outcome: r, Reward: r})
			}
		}
		return trs, nil
	}, &calls
}

// The batch wants 2 informative groups. Draw 0: group 0 rewards 1, 0
// (informative), group 1 rewards 1, 1 (zero variance). Draw 1: groups 2
// and 3 both informative; 2 fills the batch and 3 is surplus. So 2 draws,
// 1 group dropped for zero variance, groups 0 and 2 kept, 3 surplus.
func TestDynamicSampleRefills(t *testing.T) {
	draw, calls := drawOf([][][]float64{{{1, 0}, {1, 1}}, {{0, 0.5}, {1, 0}}, {{1, 0}, {1, 0}}})
	got, err := DynamicSample(2, 10, draw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Draws != 2 || *calls != 2 || got.ZeroVariance != 1 || got.Informative != 2 || len(got.Episodes) != 8 {
		t.Fatalf("%+v after %d calls; want 2 draws, 1 zero-variance group, 2 informative, 8 episodes", got, *calls)
	}
	want := map[int]string{0: "", 1: trajectory.DroppedZeroVariance, 2: "", 3: trajectory.DroppedSurplus}
	for _, tr := range got.Episodes {
		if tr.Dropped != want[tr.Group] {
			t.Errorf("group %d sample %d dropped %q, want %q", tr.Group, tr.Sample, tr.Dropped, want[tr.Group])
		}
	}
}

// With every group's rewards agreeing the draws stop at the cap, 3: the
// batch has no informative group, and every episode is marked.
func TestDynamicSampleCap(t *testing.T) {
	flat := [][]float64{{0, 0}, {1, 1}}
	draw, calls := drawOf([][][]float64{flat, flat, flat, flat, flat})
	got, err := DynamicSample(2, 3, draw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Draws != 3 || *calls != 3 || got.ZeroVariance != 6 || got.Informative != 0 || len(got.Episodes) != 12 {
		t.Fatalf("%+v after %d calls; want 3 draws (the cap), 6 zero-variance groups, none informative", got, *calls)
	}
	for _, tr := range got.Episodes {
		if tr.Dropped != trajectory.DroppedZeroVariance {
			t.Fatalf("group %d dropped %q, want zero_variance", tr.Group, tr.Dropped)
		}
	}
}

// One draw that has the batch's informative groups is the only draw; a
// group of one sample counts as informative (verl keeps it).
func TestDynamicSampleOneDraw(t *testing.T) {
	draw, calls := drawOf([][][]float64{{{1, 0}, {0.5}}})
	got, err := DynamicSample(2, 10, draw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Draws != 1 || *calls != 1 || got.Informative != 2 || got.ZeroVariance != 0 {
		t.Fatalf("%+v; want one draw with 2 informative groups", got)
	}
}

// The more hook is asked before every draw after the first, with what is
// drawn so far (draws 1 and 2, no informative group), and its false ends
// the drawing there: 2 draws of a cap of 10, Stopped set, the episodes
// drawn kept and marked.
func TestDynamicSampleMoreStops(t *testing.T) {
	flat := [][]float64{{0, 0}, {1, 1}}
	draw, calls := drawOf([][][]float64{flat, flat, flat, flat})
	var asked []int
	got, err := DynamicSample(2, 10, draw, func(d Drawn) (bool, error) {
		asked = append(asked, d.Draws)
		return d.Draws < 2, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Draws != 2 || *calls != 2 || !got.Stopped || len(got.Episodes) != 8 || got.ZeroVariance != 4 || fmt.Sprint(asked) != "[1 2]" {
		t.Fatalf("%+v after %d calls, hook asked at %v; want 2 draws, stopped, 8 episodes, hook asked at [1 2]", got, *calls, asked)
	}
}
