package code

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Anonymous shared memory cannot take the host's memory past the limits:
// a snippet that tries to hold 640 MB (memory_mb 256) through memfd_create,
// through SysV shared memory (shmget), or in pipe buffers, holds none of it
// through the first two (refused) and no more than memory_mb in pipes (the
// file limit), and the host's shared memory stays where it was while the
// sandbox runs.
func TestSharedMemoryRoutesAreBounded(t *testing.T) {
	const memMB, triesMB = 256, 640
	tl := newTool(t, func(l *Limits) { l.MemoryMB, l.Wall, l.MaxOutput = memMB, 10*time.Second, 4000 })
	for _, c := range []struct {
		route string
		code  string
		max   int // MB the route may hold
	}{
		{"memfd_create", `
held = []
try:
    for i in range(%d):
        fd = os.memfd_create("m%%d" %% i)
        os.ftruncate(fd, 16 << 20)
        m = mmap.mmap(fd, 16 << 20)
        m.write(b"x" * (16 << 20))
        m.close()
        held.append(fd)
except OSError as e:
    print("refused:", e)
mb = 16 * len(held)
`, 0},
		{"shmget", `
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
n = 0
for i in range(%d):
    sid = libc.shmget(0, 16 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if sid < 0:
        print("refused: errno", ctypes.get_errno())
        break
    addr = libc.shmat(sid, None, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        print("shmat failed: errno", ctypes.get_errno())
        break
    ctypes.memset(addr, 120, 16 << 20)
    libc.shmdt(ctypes.c_void_p(addr))
    n += 1
mb = 16 * n
`, 0},
		{"pipes", `
held = []
try:
    for i in range(%d):
        r, w = os.pipe()
        held += [r, w]
        size = fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"x" * 65536)
        except BlockingIOError:
            pass
except OSError as e:
    print("stopped:", e)
mb = len(held) // 2
`, memMB},
	} {
		before, ok := hostShmem()
		if !ok {
			t.Skip("no Shmem line in /proc/meminfo to measure the host's memory by")
		}
		peak := before
		done, sampled := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				select {
				case <-done:
					return
				case <-time.After(10 * time.Millisecond):
					now, _ := hostShmem()
					peak = max(peak, now)
				}
			}
		}()
		r := run(t, tl, "import ctypes, fcntl, mmap, os, time\n"+fmt.Sprintf(c.code, triesMB/16)+"print('held', mb, 'MB', flush=True)\ntime.sleep(1)\n")
		close(done)
		<-sampled
		t.Logf("%s: %s", c.route, r.Content)
		var held int
		if i := strings.Index(r.Content, "held "); i < 0 {
			t.Errorf("%s: no count in %q", c.route, r.Content)
			continue
		} else if _, err := fmt.Sscanf(r.Content[i:], "held %d MB", &held); err != nil {
			t.Fatalf("%q: %v", r.Content, err)
		}
		if held > c.max {
			t.Errorf("%s: the snippet held %d MB (memory_mb %d):\n%s", c.route, held, memMB, r.Content)
		}
		// Other processes on the host may use some shared memory meanwhile.
		const slackMB = 32
		if grew := (peak - before) >> 20; grew > slackMB {
			t.Errorf("%s: the host's shared memory grew by %d MB while the sandbox ran", c.route, grew)
		}
	}
}

// memory_mb holds for the whole call, not per process: a snippet whose 6
// forked children each take and touch 64 MB (384 MB together, each
// child well within its own 256 MB of address space), then wait, under
// memory_mb 256, has at most 3 of them alive with their 64 MB after 3 s
// (3 x 64 = 192 MB plus the interpreters; a fourth would pass 256), the
// others killed by the kernel, which the result says. With a limit per
// process only, all 6 lived.
func TestMemoryLimitHoldsForTheWholeCall(t *testing.T) {
	const memMB, children, childMB = 256, 6, 64
	tl := newTool(t, func(l *Limits) { l.MemoryMB, l.Wall, l.MaxOutput = memMB, 10*time.Second, 4000 })
	r := run(t, tl, fmt.Sprintf(`
import os, time
r, w = os.pipe()
kids = []
for i in range(%d):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        block = b"\x01" * (%d << 20)
        os.write(w, b"x")
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
os.close(w)
time.sleep(3)
alive = sum(1 for pid in kids if os.waitpid(pid, os.WNOHANG) == (0, 0))
print("alive", alive, flush=True)
for pid in kids:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
`, children, childMB))
	t.Logf("%s", r.Content)
	var alive int
	if _, err := fmt.Sscanf(r.Content, "alive %d", &alive); err != nil {
		t.Fatalf("%q: %v", r.Content, err)
	}
	if alive > (memMB-1)/childMB {
		t.Errorf("%d children alive with %d MB each under memory_mb %d:\n%s", alive, childMB, memMB, r.Content)
	}
	if r.OK || !strings.Contains(r.Content, "[memory limit 256 MB reached: a process was killed]") {
		t.Errorf("the result does not say the memory limit killed a process:\n%s", r.Content)
	}
}
