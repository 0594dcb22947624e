package store

import (
	"github.com/agentrl/agentrl/trajectory/trajectorytest"

	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trajectory"
)

// fullTraj has every field set to a distinct, non-default value, with
// unicode and invalid UTF-8 in the texts.
func TestRoundTripEveryField(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "rt", ConfigJSON: `{"lr":1e-6}`, GitRev: "abc123", Start: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	want := trajectorytest.Full()
	eval := synthTraj(3, trajectory.Eval, 0, 0, 300, 3)
	if err := s.WriteIteration(3, map[string]float64{"loss": 0.5}, []*trajectory.Trajectory{want, eval}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadIteration(3, trajectory.Train)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("LoadIteration(3, train) =\n%+v\nwant\n%+v", got, want)
	}
	one, err := s.Get(want.ID)
	if err != nil || !reflect.DeepEqual(one, want) {
		t.Fatalf("Get(%s) = %+v, %v", want.ID, one, err)
	}
	both, err := s.LoadIteration(3, "")
	if err != nil || len(both) != 2 || both[0].ID != want.ID || !reflect.DeepEqual(both[1], eval) {
		t.Fatalf("LoadIteration(3, \"\") gave %d trajectories, %v; want both in write order", len(both), err)
	}
}

func TestRoundTripNilAndEmpty(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "rt"}); err != nil {
		t.Fatal(err)
	}
	// nilT: nothing computed (no gold, no components, no tokens, no critic).
	nilT := &trajectory.Trajectory{ID: "0-eval-0-0", Split: trajectory.Eval, Stop: trajectory.StopCancelled}
	// emptyT: empty but present collections; Values stays nil (no critic)
	// while Advantages is an empty, non-nil slice.
	emptyT := &trajectory.Trajectory{ID: "0-eval-1-0", Split: trajectory.Eval, Group: 1, Stop: trajectory.StopError,
		Gold: []string{}, Components: map[string]float64{}, Tokens: []int32{}, Logprobs: []float32{},
		Mask: []uint8{}, TurnOf: []int16{}, Advantages: []float32{}, Returns: []float32{}, Turns: []trajectory.Turn{}}
	if err := s.WriteIteration(0, nil, []*trajectory.Trajectory{nilT, emptyT}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadIteration(0, trajectory.Eval)
	if err != nil || len(got) != 2 {
		t.Fatalf("LoadIteration: %d, %v", len(got), err)
	}
	if !reflect.DeepEqual(got[0], nilT) {
		t.Errorf("nil fields: got %+v, want %+v", got[0], nilT)
	}
	wantEmpty := *emptyT
	wantEmpty.Turns = nil // documented: no turns read back as nil
	if !reflect.DeepEqual(got[1], &wantEmpty) {
		t.Errorf("empty fields: got %#v, want %#v", got[1], &wantEmpty)
	}
}

func TestNonFiniteFloats(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "nan"}); err != nil {
		t.Fatal(err)
	}
	tr := synthTraj(0, trajectory.Train, 0, 0, 120, 1)
	tr.Reward = math.NaN()
	tr.Outcome = math.Inf(-1) // REAL columns keep infinities
	tr.Components = map[string]float64{"em": math.NaN(), "f1": 0.5}
	tr.Turns[0].ProcessReward = math.NaN()
	if err := s.WriteIteration(0, map[string]float64{"loss": math.NaN(), "kl": math.Inf(1), "lr": 1e-6}, []*trajectory.Trajectory{tr}); err != nil {
		t.Fatalf("WriteIteration with NaN values: %v", err)
	}
	got, err := s.Get(tr.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(got.Reward) || !math.IsInf(got.Outcome, -1) || !math.IsNaN(got.Components["em"]) ||
		got.Components["f1"] != 0.5 || !math.IsNaN(got.Turns[0].ProcessReward) {
		t.Errorf("got reward %v, outcome %v, components %v, process reward %v; want NaN, -Inf, em NaN f1 0.5, NaN",
			got.Reward, got.Outcome, got.Components, got.Turns[0].ProcessReward)
	}
	ms, err := s.Metrics()
	if err != nil || len(ms) != 1 {
		t.Fatalf("Metrics: %v, %v", ms, err)
	}
	m := ms[0].Metrics
	if !math.IsNaN(m["loss"]) || !math.IsNaN(m["kl"]) || m["lr"] != 1e-6 || !math.IsNaN(ms[0].RewardMean) {
		t.Errorf("metrics %v, reward mean %v; want loss NaN, kl NaN (JSON null), lr 1e-6, reward mean NaN", m, ms[0].RewardMean)
	}
}

func TestWriteIterationIsAllOrNothing(t *testing.T) {
	s := openTemp(t)
	if err := s.WriteIteration(0, nil, nil); err == nil || !strings.Contains(err.Error(), "BeginRun") {
		t.Fatalf("write before BeginRun: %v; want an error pointing to BeginRun", err)
	}
	if err := s.BeginRun(RunInfo{Name: "aon"}); err != nil {
		t.Fatal(err)
	}
	// The duplicate id fails on insert, after the first trajectory and the
	// iteration row were written inside the transaction.
	dup := synthBatch(0, 3, 200, 2)
	dup[2].ID = dup[0].ID
	if err := s.WriteIteration(0, nil, dup); err == nil || !strings.Contains(err.Error(), dup[0].ID) {
		t.Fatalf("duplicate id: %v; want an error naming %s", err, dup[0].ID)
	}
	var n int
	for _, table := range []string{"iterations", "trajectories", "turns", "trajectory_tokens"} {
		if err := s.db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("after a failed write %s holds %d rows, want 0", table, n)
		}
	}
	if _, ok, err := s.LastIteration(); ok || err != nil {
		t.Errorf("LastIteration after a failed write: ok %v, %v; want none", ok, err)
	}
	// The same iteration written correctly afterwards is stored.
	if err := s.WriteIteration(0, nil, synthBatch(0, 3, 200, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(0, nil, synthBatch(0, 1, 200, 2)); err == nil || !strings.Contains(err.Error(), "already stored") {
		t.Errorf("writing iteration 0 twice: %v; want an already-stored error", err)
	}
}

func TestWriteIterationRejectsBadTrajectories(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "bad"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mod  func(*trajectory.Trajectory)
		want string
	}{
		{"short mask", func(t *trajectory.Trajectory) { t.Mask = t.Mask[:10] }, "has 200 tokens but 10 Mask"},
		{"nil logprobs", func(t *trajectory.Trajectory) { t.Logprobs = nil }, "has 200 tokens but 0 Logprobs"},
		{"long advantages", func(t *trajectory.Trajectory) { t.Advantages = append(t.Advantages, 0) }, "has 200 tokens but 201 Advantages"},
		{"other iteration", func(t *trajectory.Trajectory) { t.Iteration = 4 }, "has iteration 4"},
		{"no split", func(t *trajectory.Trajectory) { t.Split = "" }, `has split ""`},
		{"no id", func(t *trajectory.Trajectory) { t.ID = "" }, "empty id"},
	} {
		tr := synthTraj(0, trajectory.Train, 0, 0, 200, 2)
		c.mod(tr)
		if err := s.WriteIteration(0, nil, []*trajectory.Trajectory{tr}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.name, err, c.want)
		}
	}
	if err := s.WriteIteration(0, nil, []*trajectory.Trajectory{nil}); err == nil {
		t.Error("a nil trajectory must be an error")
	}
	// Values may be nil (no critic) while the other arrays are full.
	tr := synthTraj(0, trajectory.Train, 0, 0, 200, 2)
	tr.Values = nil
	if err := s.WriteIteration(0, nil, []*trajectory.Trajectory{tr}); err != nil {
		t.Errorf("nil Values: %v", err)
	}
}

func TestGetMissing(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Get("0-train-0-0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get on an empty store: %v; want ErrNotFound", err)
	}
	if err := s.BeginRun(RunInfo{Name: "g"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Get(nope): %v; want ErrNotFound naming the id", err)
	}
}
