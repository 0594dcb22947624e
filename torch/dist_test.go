package torch

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// freePort asks the kernel for a free TCP port on loopback.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestCollectivesGloo runs two processes (this test binary, in the role of
// TestCollectivesWorker) that meet at a TCPStore on loopback and check
// every collective against values worked out by hand.
func TestCollectivesGloo(t *testing.T) {
	runTwoRanks(t, "TestCollectivesWorker")
}

// runTwoRanks runs the test named worker in two processes of this test
// binary, ranks 0 and 1 (AGENTRL_TEST_RANK), with a free port for their
// store (AGENTRL_TEST_PORT) and env added, and fails t unless both pass.
func runTwoRanks(t *testing.T, worker string, env ...string) {
	t.Helper()
	port := freePort(t)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for r := 0; r < 2; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^"+worker+"$", "-test.v")
		cmd.Env = append(append(os.Environ(), "AGENTRL_TEST_RANK="+strconv.Itoa(r), "AGENTRL_TEST_PORT="+strconv.Itoa(port)), env...)
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &b)
	}
	failed := false
	for r, cmd := range cmds {
		if err := cmd.Wait(); err != nil || !bytes.Contains(outs[r].Bytes(), []byte("--- PASS: "+worker)) {
			t.Errorf("rank %d: %v\n%s", r, err, outs[r])
			failed = true
		}
	}
	if failed {
		t.FailNow()
	}
}

// joinTestGroup joins rank of the two-rank Gloo group a parent test
// started (its store's port in AGENTRL_TEST_PORT); both close when the
// test ends.
func joinTestGroup(t *testing.T, rank int) (*KVStore, *Group) {
	t.Helper()
	port, _ := strconv.Atoi(os.Getenv("AGENTRL_TEST_PORT"))
	s, err := NewKVStore("127.0.0.1", port, rank == 0, 2, 30*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	g, err := NewGroup(s, Gloo, rank, 2, CPU, Network{Host: "127.0.0.1"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return s, g
}

func TestCollectivesWorker(t *testing.T) {
	rs := os.Getenv("AGENTRL_TEST_RANK")
	if rs == "" {
		t.Skip("run by TestCollectivesGloo in a child process")
	}
	rank, _ := strconv.Atoi(rs)
	s, g := joinTestGroup(t, rank)

	// Store: both ranks add to one counter; a value set by rank 0 is read by 1.
	if _, err := s.Add("count", int64(rank+1)); err != nil {
		t.Fatal(err)
	}
	if rank == 0 {
		if err := s.Set("greeting", []byte("hello")); err != nil {
			t.Fatal(err)
		}
	} else if v, err := s.Get("greeting"); err != nil || string(v) != "hello" {
		t.Fatalf("get = %q, %v", v, err)
	}
	if err := g.Barrier(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Add("count", 0); err != nil || v != 3 {
		t.Fatalf("counter = %d, %v; want 1+2", v, err)
	}

	// AllReduce: rank 0 holds (1, 5, -2), rank 1 (10, 3, 4).
	in := [][]float64{{1, 5, -2}, {10, 3, 4}}[rank]
	for _, c := range []struct {
		op   ReduceOp
		want []float64
	}{{Sum, []float64{11, 8, 2}}, {Max, []float64{10, 5, 4}}, {Min, []float64{1, 3, -2}}} {
		v := append([]float64(nil), in...)
		if err := g.AllReduce(v, c.op); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(v) != fmt.Sprint(c.want) {
			t.Errorf("allreduce %d = %v, want %v", c.op, v, c.want)
		}
	}

	// AllGather of different lengths, one of them empty.
	parts, err := g.AllGather([][]byte{[]byte("abc"), nil}[rank])
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || string(parts[0]) != "abc" || len(parts[1]) != 0 {
		t.Errorf("allgather = %q", parts)
	}

	// Broadcast from rank 1, in f32 and bf16.
	b, _ := FromFloat32([]float32{float32(rank), float32(rank) * 2}, 2)
	defer b.Free()
	bb, _ := b.To(CPU, BFloat16)
	defer bb.Free()
	if err := g.Broadcast([]*Tensor{b, bb}, 1); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Tensor{b, bb} {
		if v, _ := x.Float32s(); fmt.Sprint(v) != "[1 2]" {
			t.Errorf("broadcast (%v) = %v, want [1 2]", x.DType(), v)
		}
	}

	// AllReduceGrads: five parameters, a 16-byte bucket limit (so several
	// buckets); rank 1 has no gradient on the third, neither rank on the
	// fourth (it must keep none); the fifth is bf16, which Gloo in libtorch
	// 1.13 cannot reduce by itself. grad of sum(w*x) with respect to w is x.
	x := [][][]float32{{{1, 2, 3}, {4}, {5, 6}, nil, {7, 8}}, {{10, 20, 30}, {40}, {50, 60}, nil, {70, 80}}}[rank]
	want := [][]float32{{11, 22, 33}, {44}, {5, 6}, nil, {77, 88}}
	var params []*Tensor
	for i, xi := range x {
		dt := Float32
		if i == 4 {
			dt = BFloat16
		}
		w, _ := Zeros(dt, CPU, int64(max(len(xi), 1)))
		defer w.Free()
		if err := w.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		params = append(params, w)
		if (rank == 1 && i == 2) || xi == nil {
			continue
		}
		s := NewScope()
		xt := s.Float32(xi, int64(len(xi)))
		if dt == BFloat16 {
			xt = s.Adopt(xt.To(CPU, BFloat16))
		}
		l := s.Sum(s.Mul(w, xt))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := l.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if err := g.AllReduceGrads(params, 16); err != nil {
		t.Fatal(err)
	}
	for i, p := range params {
		gr, err := p.Grad()
		if want[i] == nil {
			if gr != nil || err != nil {
				t.Errorf("param %d has no gradient on any rank but got one (%v)", i, err)
			}
			continue
		}
		if err != nil || gr == nil {
			t.Fatalf("param %d: no grad (%v)", i, err)
		}
		v, _ := gr.Float32s()
		gr.Free()
		if fmt.Sprint(v) != fmt.Sprint(want[i]) {
			t.Errorf("param %d grad = %v, want %v", i, v, want[i])
		}
	}
}

// TestKVStoreTimeout: a client whose server never comes up fails with an
// error after its timeout instead of hanging.
func TestKVStoreTimeout(t *testing.T) {
	port := freePort(t)
	start := time.Now()
	_, err := NewKVStore("127.0.0.1", port, false, 2, 2*time.Second, "")
	if err == nil {
		t.Fatal("connected to a store nobody serves")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("gave up after %v, timeout was 2s", d)
	}
	t.Logf("error after %v: %v", time.Since(start).Round(time.Millisecond), err)
}
