// Package memtest measures a test process's memory: how far its peak
// resident memory rose during a step, for tests that check a refusal comes
// before an allocation.
package memtest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// PeakRSS resets the process's peak resident memory (clear_refs 5) and
// returns a function that reports how far it rose since, in bytes; the
// test skips where /proc does not allow it.
func PeakRSS(t testing.TB) func() int64 {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	start := vmHWM(t)
	return func() int64 { return vmHWM(t) - start }
}

// vmHWM is the process's peak resident memory in bytes.
func vmHWM(t testing.TB) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}
