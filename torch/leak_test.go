package torch

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func rssKB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	t.Skip("no VmRSS")
	return 0
}

func cycle(t *testing.T, n int) {
	data := make([]float32, 4096)
	for i := 0; i < n; i++ {
		s := NewScope()
		a := s.Float32(data, 64, 64)
		b := s.Exp(s.MulScalar(a, 0.5))
		c := s.Sum(b)
		if s.Err() != nil || c == nil {
			t.Fatal(s.Err())
		}
		s.Close()
		x, err := FromFloat32(data, 4096)
		if err != nil {
			t.Fatal(err)
		}
		x.Free()
	}
}

// 10,000 create/free cycles leave no live handle, no leak reported by the
// finalizer, and no growth of the resident set beyond allocator noise.
func TestNoLeaksAcrossCycles(t *testing.T) {
	start := LiveTensors()
	leaked := LeakedTensors()
	cycle(t, 1000) // warm up allocators
	runtime.GC()
	before := rssKB(t)
	cycle(t, 10000)
	runtime.GC()
	runtime.GC()
	after := rssKB(t)
	if d := LiveTensors() - start; d != 0 {
		t.Fatalf("%d tensors still live after the workload", d)
	}
	if d := LeakedTensors() - leaked; d != 0 {
		t.Fatalf("finalizer found %d unfreed tensors", d)
	}
	// Each cycle allocates ~80 KB of tensors: 10,000 leaked cycles would be
	// ~800 MB. Allow 16 MB of allocator noise.
	if after-before > 16*1024 {
		t.Fatalf("RSS grew from %d KB to %d KB", before, after)
	}
	t.Logf("RSS %d KB -> %d KB", before, after)
}

// A tensor dropped without Free is reported by the finalizer.
func TestFinalizerReportsLeak(t *testing.T) {
	leaked := LeakedTensors()
	func() {
		x, err := FromFloat32([]float32{1}, 1)
		if err != nil {
			t.Fatal(err)
		}
		_ = x
	}()
	for i := 0; i < 10 && LeakedTensors() == leaked; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if LeakedTensors() != leaked+1 {
		t.Fatalf("leak counter %d, want %d", LeakedTensors(), leaked+1)
	}
}
