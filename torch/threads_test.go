package torch

import (
	"runtime"
	"testing"
)

// TestThreadsOnEveryOSThread: OpenMP keeps its thread count per OS thread,
// and a goroutine may call into libtorch from any of Go's threads. A thread
// that last ran under another count (an earlier job in the same process, as
// in a test binary) must not keep it: its sums would be split, and rounded,
// in another order, and a resumed run would no longer match the
// uninterrupted one bit for bit. Every entry point runs through the same
// guard, so Threads, called on the stale thread, sees what a forward would.
func TestThreadsOnEveryOSThread(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	old := Threads()
	t.Cleanup(func() { SetThreads(old) })
	set, next, got := make(chan error), make(chan struct{}), make(chan int)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		set <- SetThreads(1)
		<-next
		got <- Threads()
	}()
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread() // this goroutine's thread is not the other's
	defer runtime.UnlockOSThread()
	if err := SetThreads(2); err != nil {
		t.Fatal(err)
	}
	next <- struct{}{}
	if n := <-got; n != 2 {
		t.Fatalf("an OS thread last set to 1 thread runs libtorch on %d after SetThreads(2) elsewhere, want 2", n)
	}
}

// TestBackwardOrderOnEveryOSThread: a backward pass differentiates a
// graph's ops latest first, and a tensor that feeds several ops sums their
// gradients in that order. libtorch numbers the ops per OS thread, and Go
// moves a goroutine between OS threads between two calls: the order, and
// so the rounding of the sums, must still be the order in which the ops
// were made, whichever threads made them. p feeds p*1, p*2^25 and
// p*(-2^25), made in that order and added up, so p's gradient sums 1,
// 2^25 and -2^25 in f32 latest first: (-2^25 + 2^25) + 1 = 1. An order
// that adds 1 to a large term first rounds 1 + 2^25 or 1 - 2^25 to 2^25
// or -2^25 (ties to even) and ends at 0. The first product is made on one
// device worker's thread and the rest on another's; the first thread's
// count is moved on between tries so that it is ahead of the second's in
// one of each try's two assignments.
func TestBackwardOrderOnEveryOSThread(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	a, b := NewWorker(), NewWorker()
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	// advance records n autograd nodes on w's thread.
	advance := func(w *Worker, n int) {
		w.Do(func() {
			s := NewScope()
			defer s.Close()
			x := s.Float32([]float32{1}, 1)
			if err := x.SetRequiresGrad(true); err != nil {
				t.Error(err)
				return
			}
			for range n {
				x = s.MulScalar(x, 1)
			}
			if err := s.Err(); err != nil {
				t.Error(err)
			}
		})
	}
	// grad makes p*1 on first's thread, the rest of the loss and its
	// backward pass on rest's, and returns p's gradient.
	grad := func(first, rest *Worker) float32 {
		s := NewScope()
		defer s.Close()
		var p, t1 *Tensor
		first.Do(func() {
			p = s.Float32([]float32{0.5}, 1)
			if err := p.SetRequiresGrad(true); err != nil {
				s.fail(err)
			}
			t1 = s.MulScalar(p, 1)
		})
		var g []float32
		rest.Do(func() {
			const big = 1 << 25
			loss := s.Sum(s.Add(s.Add(t1, s.MulScalar(p, big)), s.MulScalar(p, -big)))
			if err := s.Err(); err != nil {
				t.Error(err)
				return
			}
			if err := loss.Backward(); err != nil {
				t.Error(err)
				return
			}
			gt, err := p.Grad()
			if err != nil {
				t.Error(err)
				return
			}
			defer gt.Free()
			if g, err = gt.Float32s(); err != nil {
				t.Error(err)
			}
		})
		if len(g) != 1 {
			t.Fatalf("gradient %v, want one value", g)
		}
		return g[0]
	}
	if g := grad(a, a); g != 1 {
		t.Fatalf("one thread: gradient %g, want 1 (the products differentiated latest first)", g)
	}
	for try := range 3 {
		advance(a, 20)
		for _, ws := range [][2]*Worker{{a, b}, {b, a}} {
			if g := grad(ws[0], ws[1]); g != 1 {
				t.Errorf("try %d: the first product made on another OS thread than the rest: gradient %g, want 1", try, g)
			}
		}
	}
}
