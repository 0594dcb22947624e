package code

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// newTool builds the tool with tight limits, changed by tweak (when not
// nil), or skips where bubblewrap or Python is missing.
func newTool(t *testing.T, tweak func(*Limits)) *Tool {
	t.Helper()
	sb := DefaultSandbox()
	sb.Limits = Limits{CPU: 2 * time.Second, Wall: 4 * time.Second, MemoryMB: 256, Processes: 16, DiskMB: 16, MaxOutput: 200}
	if tweak != nil {
		tweak(&sb.Limits)
	}
	tl, err := New(sb)
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	return tl
}

func run(t *testing.T, tl *Tool, code string) envs.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"code": code})
	r, err := tl.Call(context.Background(), args)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return r
}

func TestRunsPython(t *testing.T) {
	tl := newTool(t, nil)
	r := run(t, tl, "print(sum(range(10)))")
	if !r.OK || r.Content != "45" {
		t.Fatalf("%+v", r)
	}
	r = run(t, tl, "import sys\nprint('out')\nsys.stderr.write('warn\\n')\nsys.exit(2)")
	if r.OK || r.Content != "out\n[stderr]\nwarn\n[exit status 2]" {
		t.Fatalf("%q", r.Content)
	}
	r = run(t, tl, "1/0")
	if r.OK || !strings.Contains(r.Content, "ZeroDivisionError") || !strings.HasSuffix(r.Content, "[exit status 1]") {
		t.Fatalf("%q", r.Content)
	}
	if r := run(t, tl, "x = 1"); r.Content != "(no output)" || !r.OK {
		t.Fatalf("%+v", r)
	}
}

func TestInfiniteLoopHitsCPULimit(t *testing.T) {
	tl := newTool(t, func(l *Limits) { l.CPU, l.Wall = time.Second, 10*time.Second })
	start := time.Now()
	r := run(t, tl, "while True: pass")
	// RLIMIT_CPU sends SIGXCPU at the soft limit (1 s of CPU).
	if r.OK || r.Content != "[killed by signal: CPU time limit exceeded]" || time.Since(start) > 8*time.Second {
		t.Fatalf("%q after %s", r.Content, time.Since(start))
	}
}

func TestSleepHitsWallLimit(t *testing.T) {
	tl := newTool(t, func(l *Limits) { l.Wall = 500 * time.Millisecond })
	start := time.Now()
	r := run(t, tl, "import time\nprint('before', flush=True)\ntime.sleep(60)")
	if r.OK || r.Content != "before\n[wall time limit 500ms reached]" || time.Since(start) > 5*time.Second {
		t.Fatalf("%q after %s", r.Content, time.Since(start))
	}
}

func TestMemoryLimit(t *testing.T) {
	tl := newTool(t, nil)
	r := run(t, tl, "x = bytearray(1 << 30)\nprint('allocated')")
	if r.OK || !strings.Contains(r.Content, "MemoryError") {
		t.Fatalf("%q", r.Content)
	}
}

func TestLargeOutputIsCut(t *testing.T) {
	tl := newTool(t, nil)
	r := run(t, tl, "import sys\nsys.stdout.write('x' * 10_000_000)")
	want := strings.Repeat("x", 200) + fmt.Sprintf("\n[%d bytes of output cut]", 10_000_000-200)
	if !r.OK || r.Content != want {
		t.Fatalf("%d chars: %q...", len(r.Content), r.Content[:min(len(r.Content), 300)])
	}
}

// A fork bomb meets the process limit; every process it made is gone
// when the call returns (the children exec "sleep 987654", which would
// show up in the host's /proc if they survived).
func TestForkBombIsContained(t *testing.T) {
	tl := newTool(t, func(l *Limits) { l.Wall, l.Processes = 3*time.Second, 16 })
	r := run(t, tl, `
import os
n = 0
try:
    while True:
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "987654"])
        n += 1
except OSError as e:
    print("fork refused after", n, "children:", e.strerror, flush=True)
import time
time.sleep(60)
`)
	if r.OK || !strings.Contains(r.Content, "fork refused after") || !strings.Contains(r.Content, "Resource temporarily unavailable") ||
		!strings.HasSuffix(r.Content, "[wall time limit 3s reached]") {
		t.Fatalf("%q", r.Content)
	}
	var n int
	if _, err := fmt.Sscanf(r.Content, "fork refused after %d", &n); err != nil || n >= 16 {
		t.Fatalf("%d children: %v", n, err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := sleepers()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sandboxed processes outlived the call", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sleepers counts host processes running "sleep 987654".
func sleepers() int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && string(b) == "sleep\x00987654\x00" {
			n++
		}
	}
	return n
}

// Writes land in the sandbox's own tmpfs: the host's folders are not
// there (or read-only), and nothing is left behind.
func TestFilesystemIsThrowaway(t *testing.T) {
	tl := newTool(t, func(l *Limits) { l.DiskMB, l.MaxOutput = 1, 2000 })
	host := t.TempDir()
	r := run(t, tl, fmt.Sprintf(`
import os
for p in [%q, "/usr/agentrl-test", "/etc/agentrl-test"]:
    try:
        open(p, "w").write("x")
        print("wrote", p)
    except OSError as e:
        print("refused", p, e.strerror)
open("/tmp/mine", "w").write("kept in the sandbox")
print(open("/tmp/mine").read())
print(sorted(os.listdir("/")))
try:
    open("/tmp/big", "wb").write(b"x" * (4 << 20))
except OSError as e:
    print("big file refused:", e.strerror)
`, filepath.Join(host, "escape")))
	for _, want := range []string{"refused " + filepath.Join(host, "escape") + " No such file or directory",
		"refused /usr/agentrl-test Read-only file system", "refused /etc/agentrl-test No such file or directory",
		"kept in the sandbox", "['bin', 'dev', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr']", "big file refused"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("missing %q in %q", want, r.Content)
		}
	}
	if _, err := os.Stat(filepath.Join(host, "escape")); err == nil {
		t.Fatal("the snippet wrote to the host")
	}
	if r := run(t, tl, "import os\nprint(os.path.exists('/tmp/mine'))"); r.Content != "False" {
		t.Fatalf("a file outlived its run: %q", r.Content)
	}
}

// The network is a private loopback: a server listening on the host is
// out of reach, and so is anything else.
func TestNoNetwork(t *testing.T) {
	tl := newTool(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	r := run(t, tl, fmt.Sprintf(`
import socket
for host in ["127.0.0.1", "1.1.1.1"]:
    try:
        socket.create_connection((host, %d), timeout=2)
        print("connected", host)
    except OSError as e:
        print("no", host, e.strerror)
`, port))
	if strings.Contains(r.Content, "connected") || accepted.Load() != 0 ||
		!strings.Contains(r.Content, "no 127.0.0.1 Connection refused") || !strings.Contains(r.Content, "no 1.1.1.1 Network is unreachable") {
		t.Fatalf("%q (accepted %d)", r.Content, accepted.Load())
	}
}

func TestConfigErrors(t *testing.T) {
	for want, tweak := range map[string]func(*Sandbox){
		"code: limit MemoryMB is 0, want at least 1":            func(sb *Sandbox) { sb.Limits.MemoryMB = 0 },
		"code: limit CPU is 0s, want a positive duration":       func(sb *Sandbox) { sb.Limits.CPU = 0 },
		"code: /opt/python3 is not under /usr":                  func(sb *Sandbox) { sb.Python = "/opt/python3" },
		"the sandbox needs bubblewrap":                          func(sb *Sandbox) { sb.Bwrap = "/nonexistent/bwrap" },
		"code: the sandbox does not work here: [exit status 1]": func(sb *Sandbox) { sb.Python = "/usr/bin/false" },
	} {
		sb := DefaultSandbox()
		tweak(&sb)
		_, err := New(sb)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", sb, err, want)
		}
	}
}

// Every place the snippet can write shares the disk_mb budget: a snippet
// that fills each mount point and each usual scratch folder with 1 MB
// files gets no more than disk_mb in all, and the host's shared memory
// (where tmpfs pages are counted) grows by no more than that while the
// sandbox holds them.
func TestWritablePlacesShareTheDiskLimit(t *testing.T) {
	const diskMB, triesMB = 4, 48
	tl := newTool(t, func(l *Limits) { l.DiskMB, l.Wall, l.MaxOutput = diskMB, 8*time.Second, 4000 })
	before, ok := hostShmem()
	if !ok {
		t.Skip("no Shmem line in /proc/meminfo to measure the host's memory by")
	}
	peak := before
	done := make(chan struct{})
	sampled := make(chan struct{})
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
	r := run(t, tl, fmt.Sprintf(`
import os, time
places = {"/", "/dev", "/dev/shm", "/tmp", "/run", "/var/tmp", os.path.expanduser("~")}
for line in open("/proc/self/mountinfo"):
    places.add(line.split()[4])
chunk = b"x" * (1 << 20)
total = 0
for k, place in enumerate(sorted(places)):
    n = 0
    for i in range(%d):
        try:
            with open(os.path.join(place, "fill%%d-%%d" %% (k, i)), "wb") as f:
                f.write(chunk)
            n += 1
        except OSError:
            break
    print(place, n, "MB", flush=True)
    total += n
print("total", total, "MB", flush=True)
time.sleep(1)
`, triesMB))
	close(done)
	<-sampled
	var total int
	if i := strings.Index(r.Content, "total "); i < 0 {
		t.Fatalf("no total in %q", r.Content)
	} else if _, err := fmt.Sscanf(r.Content[i:], "total %d MB", &total); err != nil {
		t.Fatalf("%q: %v", r.Content, err)
	}
	if !r.OK || total > diskMB {
		t.Errorf("the snippet wrote %d MB with disk_mb %d:\n%s", total, diskMB, r.Content)
	}
	// Other processes on the host may use some shared memory meanwhile.
	const slackMB = 16
	if grew := (peak - before) >> 20; grew > diskMB+slackMB {
		t.Errorf("the host's shared memory grew by %d MB with disk_mb %d", grew, diskMB)
	}
}

// hostShmem is the host's shared memory in bytes (tmpfs pages among
// them), from /proc/meminfo; false where it cannot be read.
func hostShmem() (int64, bool) {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "Shmem: %d kB", &kb); err == nil {
			return kb << 10, true
		}
	}
	return 0, false
}
