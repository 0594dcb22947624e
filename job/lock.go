package job

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the file in a run's folder whose exclusive lock (flock) the
// process writing the run holds; it contains that process's PID.
const lockFile = "run.lock"

// lockRun takes the exclusive lock of the run folder dir (made if need
// be) for this process. A second writer, in another process or through
// another open in this one, is refused with an error naming the holder's
// PID. Closing the returned file releases the lock, as does the end of
// the process, however it ends; the file is not inherited by the tools'
// processes (Go opens files close-on-exec).
func lockRun(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock run folder %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid, _ := io.ReadAll(f)
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock run folder %s: %w", dir, err)
		}
		holder := "another process"
		if p := strings.TrimSpace(string(pid)); p != "" {
			holder = "process " + p
		}
		return nil, fmt.Errorf("run folder %s is in use: %s holds its lock %s (a train, sft or eval of this run); "+
			"wait for it to end, or choose another run.name", dir, holder, path)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock run folder %s: %w", dir, err)
	}
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock run folder %s: %w", dir, err)
	}
	return f, nil
}
