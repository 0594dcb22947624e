package code

import (
	"strings"
	"testing"
)

// memoryParent finds where a call's memory cgroup can be made: under the
// process's own cgroup of a cgroup v1 memory hierarchy (as on a hybrid
// host, the memory hierarchy's mount taken over the v2 one, which lacks
// the controller there); with v2 only, under its own cgroup where that
// hands memory to its children, beside it where only its parent does;
// and it says why where memory cannot be limited per call, rather than
// falling back to a weaker limit.
func TestMemoryParent(t *testing.T) {
	const hybridMounts = `35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`
	const v2Mounts = `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate`
	files := func(content map[string]string) func(path, word string) bool {
		return func(path, word string) bool { return strings.Contains(" "+content[path]+" ", " "+word+" ") }
	}
	for _, c := range []struct {
		name, own, mounts string
		files             map[string]string
		parent            string
		v2                bool
		err               string
	}{
		{name: "v1 hybrid", own: "4:memory:/process_api/abc\n0::/", mounts: hybridMounts,
			parent: "/sys/fs/cgroup/memory/process_api/abc"},
		{name: "v1 mounted from a subfolder", own: "4:cpu,memory:/outer/job", mounts: "35 31 0:32 /outer /sys/fs/cgroup/memory rw - cgroup cgroup rw,cpu,memory",
			parent: "/sys/fs/cgroup/memory/job"},
		{name: "v1 memory not mounted", own: "4:memory:/job", mounts: v2Mounts, err: "no cgroup v1 memory hierarchy is mounted"},
		{name: "v2 delegated", own: "0::/user.slice/job", mounts: v2Mounts,
			files:  map[string]string{"/sys/fs/cgroup/user.slice/job/cgroup.subtree_control": "cpu memory pids"},
			parent: "/sys/fs/cgroup/user.slice/job", v2: true},
		{name: "v2 beside its own", own: "0::/system.slice/job.service", mounts: v2Mounts,
			files:  map[string]string{"/sys/fs/cgroup/system.slice/job.service/cgroup.controllers": "cpu io memory pids"},
			parent: "/sys/fs/cgroup/system.slice", v2: true},
		{name: "v2 without memory", own: "0::/job", mounts: v2Mounts,
			files: map[string]string{"/sys/fs/cgroup/job/cgroup.controllers": "cpu pids"},
			err:   "cgroup v2 hands the memory controller neither to this process's cgroup /sys/fs/cgroup/job nor to its children"},
		{name: "v2 root without memory for children", own: "0::/", mounts: v2Mounts,
			files: map[string]string{"/sys/fs/cgroup/cgroup.controllers": "cpu memory"},
			err:   "neither to this process's cgroup /sys/fs/cgroup nor"},
		{name: "no hierarchy", own: "0::/", mounts: "22 1 0:20 / /proc rw - proc proc rw", err: "no cgroup hierarchy with the memory controller is mounted"},
	} {
		m, err := memoryParent(c.own, c.mounts, files(c.files))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %+v, %v; want the error %q", c.name, m, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case m.parent != c.parent || m.v2 != c.v2:
			t.Errorf("%s: parent %s (v2 %v), want %s (v2 %v)", c.name, m.parent, m.v2, c.parent, c.v2)
		}
	}
}
