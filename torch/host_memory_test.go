package torch

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

const mib = 1 << 20

// The host cache's figures are process-wide and its peak never falls, so
// its tests run in a fresh process where nothing else has allocated. One
// OpenMP thread: the page faults TestHostCacheWorkerRecycles counts are the
// process's, and with libtorch 2.11's pool of threads one run in six
// counted 58-71 faults that were not the tensor's.
func TestHostCache(t *testing.T) {
	for worker, off := range map[string]string{"TestHostCacheWorkerSequence": "0", "TestHostCacheWorkerRandom": "", "TestHostCacheWorkerOff": "1", "TestHostCacheWorkerRecycles": ""} {
		cmd := exec.Command(os.Args[0], "-test.run=^"+worker+"$", "-test.v")
		cmd.Env = append(os.Environ(), "AGENTRL_TEST_HOST_CACHE=1", "AGENTRL_NO_HOST_CACHE="+off, "OMP_NUM_THREADS=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: "+worker)) {
			t.Errorf("%s: %v\n%s", worker, err, out)
		}
	}
}

func hostCacheWorker(t *testing.T) {
	if os.Getenv("AGENTRL_TEST_HOST_CACHE") == "" {
		t.Skip("runs in its own process, started by TestHostCache")
	}
	if ms := hostMemory(t); ms != (MemoryStats{}) {
		t.Fatalf("a fresh process already has large tensors: %+v", ms)
	}
}

func hostMemory(t *testing.T) MemoryStats {
	t.Helper()
	ms, err := HostMemory()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// hostTensor allocates a float32 tensor of (at least) n bytes.
func hostTensor(t *testing.T, n int64) *Tensor {
	t.Helper()
	x, err := Zeros(Float32, CPU, (n+3)/4)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A hand-worked sequence. Sizes are rounded up to 2 MiB: 5 MiB takes 6,
// 9 MiB takes 10, 7 MiB takes 8; under 4 MiB stays in the C heap.
func TestHostCacheWorkerSequence(t *testing.T) {
	hostCacheWorker(t)
	want := func(step string, live, mapped, peak int64) {
		t.Helper()
		if got, w := hostMemory(t), (MemoryStats{live * mib, mapped * mib, peak * mib}); got != w {
			t.Fatalf("%s: got %+v, want %+v (MiB: live %d, mapped %d, peak %d)", step, got, w, live, mapped, peak)
		}
	}
	a := hostTensor(t, 5*mib)
	want("5 MiB", 6, 6, 6)
	a.Free()
	want("5 MiB freed: kept", 0, 6, 6)
	b := hostTensor(t, 5*mib+100)
	want("5 MiB + 100 B reuses it", 6, 6, 6)
	b.Free()
	c := hostTensor(t, 9*mib)
	want("9 MiB: a new peak of 10, the 6 given back", 10, 10, 10)
	d := hostTensor(t, 5*mib)
	want("5 MiB beside it", 16, 16, 16)
	c.Free()
	d.Free()
	want("both freed", 0, 16, 16)
	e := hostTensor(t, 7*mib)
	want("7 MiB: the oldest (10) given back, 6 + 8 fit in 16", 8, 14, 16)
	f := hostTensor(t, 5*mib)
	want("5 MiB reuses the 6 kept", 14, 14, 16)
	g := hostTensor(t, 3*mib)
	want("3 MiB is not counted", 14, 14, 16)
	for _, x := range []*Tensor{e, f, g} {
		x.Free()
	}
	want("all freed", 0, 14, 16)
}

// Random allocations and frees: what the cache maps never exceeds the most
// ever in use, which the test tracks itself from the rounded sizes.
func TestHostCacheWorkerRandom(t *testing.T) {
	hostCacheWorker(t)
	rng := rand.New(rand.NewSource(7))
	var held []*Tensor
	var sizes []int64
	var live, peak int64
	for i := 0; i < 400; i++ {
		if len(held) > 0 && rng.Intn(2) == 0 {
			j := rng.Intn(len(held))
			held[j].Free()
			live -= sizes[j]
			held, sizes = append(held[:j], held[j+1:]...), append(sizes[:j], sizes[j+1:]...)
		} else {
			n := int64(4*mib + rng.Intn(12*mib))
			held, sizes = append(held, hostTensor(t, n)), append(sizes, (n+2*mib-1)/(2*mib)*(2*mib))
			live += sizes[len(sizes)-1]
			peak = max(peak, live)
		}
		ms := hostMemory(t)
		if ms.Allocated != live || ms.Peak != peak || ms.Reserved > peak || ms.Reserved < live {
			t.Fatalf("step %d: %+v, want live %d, peak %d, mapped in [live, peak]", i, ms, live, peak)
		}
	}
	for _, x := range held {
		x.Free()
	}
}

// AGENTRL_NO_HOST_CACHE=1 leaves every tensor to libtorch's own allocator.
func TestHostCacheWorkerOff(t *testing.T) {
	hostCacheWorker(t)
	x := hostTensor(t, 10*mib)
	defer x.Free()
	if ms := hostMemory(t); ms != (MemoryStats{}) {
		t.Fatalf("with AGENTRL_NO_HOST_CACHE=1 a 10 MiB tensor was counted: %+v", ms)
	}
}

func minorFaults(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}

// A miss over the peak resizes a cached mapping instead of mapping fresh
// memory: filling it with zeros takes no page faults, where 192 fresh MiB
// take at least 96 (2 MiB huge pages) and 49,152 with 4 KiB pages.
func TestHostCacheWorkerRecycles(t *testing.T) {
	hostCacheWorker(t)
	hostTensor(t, 256*mib).Free()
	before := minorFaults(t)
	b := hostTensor(t, 192*mib)
	faults := minorFaults(t) - before
	if ms := hostMemory(t); ms != (MemoryStats{192 * mib, 192 * mib, 256 * mib}) {
		t.Fatalf("after 256 MiB freed and 192 MiB taken: %+v", ms)
	}
	if faults >= 48 {
		t.Fatalf("zeroing a recycled 192 MiB took %d page faults, as many as fresh memory", faults)
	}
	b.Free()
	d := hostTensor(t, 224*mib)
	defer d.Free()
	if ms := hostMemory(t); ms != (MemoryStats{224 * mib, 224 * mib, 256 * mib}) {
		t.Fatalf("192 MiB grown to 224: %+v", ms)
	}
}
