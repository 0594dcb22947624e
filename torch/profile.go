package torch

// #include <stdlib.h>
// #include "internal.h"
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"time"
	"unsafe"
)

// ProfileEntry is one row of a kernel profile: the events of one name
// (an operator such as aten::addmm, or a CUDA kernel) on one device.
type ProfileEntry struct {
	Name  string
	CUDA  bool  // a CUDA device's kernel (or copy), else a CPU event
	Calls int64 // events of this name
	// Total is the time of the events; Self that time less the time of
	// the events nested in them on the same thread (an operator's calls of
	// other operators). A kernel's Self is its Total.
	Total, Self time.Duration
}

// Profile is what libtorch's profiler recorded during RecordProfile,
// reduced to one entry per name and device, sorted by self time (longest
// first).
type Profile struct {
	// CUDA: the kernels of CUDA devices were recorded as well as the
	// operators of the CPU.
	CUDA    bool
	Entries []ProfileEntry
}

// RecordProfile runs f with libtorch's profiler (Kineto) recording the
// operators libtorch runs for it, and with cuda the kernels CUDA devices
// run (a CUDA build), and returns the profile. The profiler follows the
// calling OS thread (and the threads libtorch hands its work to), so f's
// libtorch calls must be made on the calling goroutine: RecordProfile
// locks it to its thread until it returns. The profiler's own cost
// inflates short operators, so a profile says where time goes, not how
// long a step takes.
func RecordProfile(cuda bool, f func() error) (Profile, error) {
	if err := Check(); err != nil {
		return Profile{}, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var msg *C.char
	cu := C.int(0)
	if cuda {
		cu = 1
	}
	if err := check("profile_start", C.ar_profile_start(cu, &msg), msg); err != nil {
		return Profile{}, err
	}
	ferr := f()
	var entries *C.ar_profile_entry
	var n C.int64_t
	if err := check("profile_stop", C.ar_profile_stop(&entries, &n, &msg), msg); err != nil {
		if ferr != nil {
			return Profile{}, ferr
		}
		return Profile{}, err
	}
	defer C.ar_profile_free(entries, n)
	if ferr != nil {
		return Profile{}, ferr
	}
	p := Profile{CUDA: cuda}
	for _, e := range unsafe.Slice(entries, int(n)) {
		p.Entries = append(p.Entries, ProfileEntry{Name: C.GoString(e.name), CUDA: e.device == C.AR_PROFILE_CUDA,
			Calls: int64(e.calls), Total: time.Duration(e.total_ns), Self: time.Duration(e.self_ns)})
	}
	return p, nil
}

// Table is a markdown table of the top entries (at most top) by self
// time: on CUDA the devices' kernels, else the CPU's operators, each with
// its share of their summed self time, its calls, its self time and its
// average per call, and for operators their total time (with what they
// called). A last row sums the entries left out. title heads it.
func (p Profile) Table(title string, top int) string {
	var rows []ProfileEntry
	var sum time.Duration
	for _, e := range p.Entries {
		if e.CUDA == p.CUDA {
			rows = append(rows, e)
			sum += e.Self
		}
	}
	what := "operator (CPU)"
	if p.CUDA {
		what = "kernel (CUDA)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", title)
	if len(rows) == 0 {
		if p.CUDA {
			b.WriteString("(no kernel events: the linked libtorch's profiler reported none from CUPTI)\n")
		} else {
			b.WriteString("(no operator events: the profiler sees libtorch's operators, not work outside them such as the hand-written CPU decode kernels)\n")
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%d %s names, %.3f ms in all (self time)\n\n", len(rows), strings.Fields(what)[0], ms(sum))
	fmt.Fprintf(&b, "| %s | share | calls | self ms | avg µs | total ms |\n|---|---:|---:|---:|---:|---:|\n", what)
	var rest ProfileEntry
	for i, e := range rows {
		if i >= top {
			rest.Calls += e.Calls
			rest.Self += e.Self
			continue
		}
		fmt.Fprintf(&b, "| %s | %.1f%% | %d | %.3f | %.1f | %.3f |\n", cell(e.Name), share(e.Self, sum), e.Calls, ms(e.Self),
			float64(e.Self)/1e3/float64(max(e.Calls, 1)), ms(e.Total))
	}
	if n := len(rows) - top; n > 0 {
		fmt.Fprintf(&b, "| (%d others) | %.1f%% | %d | %.3f | | |\n", n, share(rest.Self, sum), rest.Calls, ms(rest.Self))
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func share(d, sum time.Duration) float64 {
	if sum <= 0 {
		return 0
	}
	return 100 * float64(d) / float64(sum)
}

// cell makes a name safe in a markdown table cell: kernel names hold
// template arguments with '|' and may run to hundreds of characters.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:117]) + "..."
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}
