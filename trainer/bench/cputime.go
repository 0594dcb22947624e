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
