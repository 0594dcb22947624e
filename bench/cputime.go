package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system, all threads) the process has used
// so far, 0 when it cannot be read. Runs report it beside the wall time: on
// a machine shared with other work the wall time grows while the CPU time
// does not, and CPU time above wall time x threads means threads spinning.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMB is the process's peak resident memory so far in MB (10^6
// bytes), as /usr/bin/time -v reports it (getrusage's ru_maxrss, KiB on
// Linux); 0 when it cannot be read.
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) * 1024 / 1e6
}
