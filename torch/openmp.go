package torch

import (
	"os"
	"syscall"
)

// PassiveOpenMP makes libgomp's idle worker threads sleep instead of
// spinning: it re-executes the running program with OMP_WAIT_POLICY=PASSIVE
// unless the variable is already set (then it returns nil and changes
// nothing). libgomp reads the variable once, when it is loaded, so this must
// be the first thing main (or TestMain) does.
//
// Why: the program's torch work runs on one locked OS thread while the Go
// runtime keeps other threads busy (tool calls, the store's writer, GC);
// spinning OpenMP workers then take the cores the rest needs. Measured on 2
// cores under load: a training step 7-15x slower with spinning workers than
// with passive ones.
func PassiveOpenMP() error {
	if os.Getenv("OMP_WAIT_POLICY") != "" {
		return nil
	}
	if err := os.Setenv("OMP_WAIT_POLICY", "PASSIVE"); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, os.Environ())
}
