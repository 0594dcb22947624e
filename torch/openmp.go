package torch

import (
	"os"
	"syscall"
)

// threadEnv are the thread-pool settings PassiveOpenMP puts in place when
// the user has not set them: libgomp's idle workers sleep instead of
// spinning, and OpenBLAS's idle workers sleep after 2^16 cycles instead of
// spinning (with sched_yield) for 2^28, about 0.1 s after every call.
var threadEnv = [][2]string{{"OMP_WAIT_POLICY", "PASSIVE"}, {"OPENBLAS_THREAD_TIMEOUT", "16"}}

// PassiveOpenMP makes the idle workers of libtorch's OpenMP pool and of
// OpenBLAS's pool sleep instead of spinning: it re-executes the running
// program with OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=16 when
// either is unset (a value the user set is kept; with both set it returns
// nil and changes nothing). Both libraries read these once, when they are
// loaded, so this must be the first thing main (or TestMain) does.
//
// Why: the program's torch work runs on one locked OS thread while the Go
// runtime keeps other threads busy (tool calls, the store's writer, GC);
// spinning workers then take the cores the rest needs. Measured on 2 cores
// under load: a training step 7-15x slower, and small-model decoding 3-13x
// slower, with spinning workers.
func PassiveOpenMP() error {
	missing := false
	for _, kv := range threadEnv {
		if _, ok := os.LookupEnv(kv[0]); !ok {
			missing = true
			if err := os.Setenv(kv[0], kv[1]); err != nil {
				return err
			}
		}
	}
	if !missing {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, os.Environ())
}
