package code

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// memoryCgroups is where the sandbox's calls get their memory cgroups: a
// folder of a cgroup hierarchy with the memory controller, in which each
// call makes a cgroup of its own, limited to Limits.MemoryMB for the
// whole call (every process of it, and the files of its tmpfs), and
// removed when the call ends. RLIMIT_AS bounds one process only: ten
// forked children of 400 MB each would hold 4 GB under a limit of 512 MB.
type memoryCgroups struct {
	parent string // the folder the calls' cgroups are made in
	v2     bool   // cgroup v2 (memory.max) rather than v1 (memory.limit_in_bytes)
}

// cgroupPrefix starts the name of every call's cgroup, followed by the
// trainer's process id and the call's number.
const cgroupPrefix = "agentrl-code-"

// calls numbers the calls' cgroups within the process.
var calls atomic.Uint64

// findMemoryCgroups finds where this process may make memory cgroups
// (memoryParent, from /proc/self/cgroup and /proc/self/mountinfo), and
// removes the cgroups left by sandboxes of processes that died.
func findMemoryCgroups() (*memoryCgroups, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	m, err := memoryParent(string(own), string(mounts), fileHas)
	if err != nil {
		return nil, err
	}
	if err := m.removeStale(); err != nil {
		return nil, err
	}
	return m, nil
}

// memoryParent is where a process may make memory cgroups, given its
// /proc/self/cgroup and /proc/self/mountinfo (has tells whether a file's
// words include one): with cgroup v1, under its own cgroup of the memory
// hierarchy; with v2, under its own cgroup where that hands the memory
// controller on to its children, else beside it (its parent hands it on,
// since its own cgroup has it). It says why where there is no such place.
func memoryParent(own, mountinfo string, has func(path, word string) bool) (*memoryCgroups, error) {
	var v1Path, v2Path string
	hasV2 := false
	for _, line := range strings.Split(strings.TrimSpace(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, hasV2 = parts[2], true
		} else if containsField(parts[1], ",", "memory") {
			v1Path = parts[2]
		}
	}
	v1Mount, v1Root, v2Mount, v2Root := cgroupMounts(mountinfo)
	switch {
	case v1Path != "" && v1Mount != "":
		return &memoryCgroups{parent: mountedPath(v1Mount, v1Root, v1Path)}, nil
	case v1Path != "":
		return nil, fmt.Errorf("this process is in the memory cgroup %s, but no cgroup v1 memory hierarchy is mounted", v1Path)
	case hasV2 && v2Mount != "":
		dir := mountedPath(v2Mount, v2Root, v2Path)
		switch {
		case has(filepath.Join(dir, "cgroup.subtree_control"), "memory"):
			return &memoryCgroups{parent: dir, v2: true}, nil
		case has(filepath.Join(dir, "cgroup.controllers"), "memory") && dir != v2Mount:
			return &memoryCgroups{parent: filepath.Dir(dir), v2: true}, nil
		}
		return nil, fmt.Errorf("cgroup v2 hands the memory controller neither to this process's cgroup %s nor to its children", dir)
	}
	return nil, errors.New("no cgroup hierarchy with the memory controller is mounted")
}

// cgroupMounts reads a mountinfo for the mount point and root of the
// cgroup v1 hierarchy with the memory controller and of the cgroup v2
// hierarchy ("" where there is none).
func cgroupMounts(mountinfo string) (v1Mount, v1Root, v2Mount, v2Root string) {
	for _, line := range strings.Split(mountinfo, "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		before, after, ok := strings.Cut(line, " - ")
		f, a := strings.Fields(before), strings.Fields(after)
		if !ok || len(f) < 5 || len(a) < 3 {
			continue
		}
		switch {
		case a[0] == "cgroup" && containsField(a[2], ",", "memory") && v1Mount == "":
			v1Mount, v1Root = f[4], f[3]
		case a[0] == "cgroup2" && v2Mount == "":
			v2Mount, v2Root = f[4], f[3]
		}
	}
	return v1Mount, v1Root, v2Mount, v2Root
}

// mountedPath is the folder of the cgroup path (as /proc/self/cgroup
// names it) in a hierarchy mounted at mount from its folder root.
func mountedPath(mount, root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = path
	}
	return filepath.Join(mount, rel)
}

// removeStale removes the calls' cgroups of sandboxes whose process is
// gone (killed during a call, before it could remove its cgroup).
func (m *memoryCgroups) removeStale() error {
	dirs, err := filepath.Glob(filepath.Join(m.parent, cgroupPrefix+"*"))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), cgroupPrefix), "-")
		n, err := strconv.Atoi(pid)
		if err != nil || n == os.Getpid() || !errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			continue // not ours, or its process lives
		}
		_ = (&callCgroup{dir: d}).remove() // a stale cgroup that will not go is harmless
	}
	return nil
}

// callCgroup is one call's memory cgroup.
type callCgroup struct {
	dir string
	v2  bool
}

// make creates a call's cgroup limited to mb MiB, swap included.
func (m *memoryCgroups) make(mb int) (*callCgroup, error) {
	dir := filepath.Join(m.parent, fmt.Sprintf("%s%d-%d", cgroupPrefix, os.Getpid(), calls.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory cgroup: %w", err)
	}
	g := &callCgroup{dir: dir, v2: m.v2}
	limit := strconv.Itoa(mb << 20)
	writes := [][2]string{{"memory.limit_in_bytes", limit}, {"memory.memsw.limit_in_bytes", limit}}
	if m.v2 {
		writes = [][2]string{{"memory.max", limit}, {"memory.swap.max", "0"}}
	}
	for i, w := range writes {
		err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0)
		if i > 0 && errors.Is(err, os.ErrNotExist) {
			continue // no swap accounting: nothing to limit there
		}
		if err != nil {
			g.remove()
			return nil, fmt.Errorf("memory cgroup: %w", err)
		}
	}
	return g, nil
}

// procs is the file a process writes its id to to join the cgroup.
func (g *callCgroup) procs() string { return filepath.Join(g.dir, "cgroup.procs") }

// oomKills is how many processes the kernel killed in the cgroup for
// going over its limit.
func (g *callCgroup) oomKills() int {
	file, key := "memory.oom_control", "oom_kill"
	if g.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// remove kills whatever is left in the cgroup (nothing, once bwrap's PID
// namespace has ended, but its processes may still be exiting) and
// removes it, trying for up to a second.
func (g *callCgroup) remove() error {
	var err error
	for range 100 {
		if err = os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if b, rerr := os.ReadFile(g.procs()); rerr == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, perr := strconv.Atoi(f); perr == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("memory cgroup %s: %w", g.dir, err)
}

// containsField reports whether s, split at sep, has the field f.
func containsField(s, sep, f string) bool {
	for _, x := range strings.Split(s, sep) {
		if x == f {
			return true
		}
	}
	return false
}

// fileHas reports whether the file's whitespace-separated words include
// word.
func fileHas(path, word string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, w := range strings.Fields(string(b)) {
		if w == word {
			return true
		}
	}
	return false
}
