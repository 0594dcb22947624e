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
