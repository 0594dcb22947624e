// Package readonlytest makes folders read-only for tests that check a
// reader never writes.
package readonlytest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Dir makes dir read-only for the rest of the test: a read-only bind mount
// over it as root (root ignores permission bits), chmod 0555 otherwise. It
// skips the test where root cannot mount, and fails it if dir is still
// writable.
func Dir(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount %s read-only as root (%v): skipping the read-only folder test", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount %s read-only (%v): skipping the read-only folder test", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o644); err == nil {
		t.Fatalf("%s is still writable", dir)
	}
}
