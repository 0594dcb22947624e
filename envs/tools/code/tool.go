// Package code is the "code" tool: it runs a Python snippet in a
// bubblewrap sandbox with CPU-time, memory, process, disk and wall-time
// limits, no network and a throwaway filesystem, and returns its output,
// truncated.
package code

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// Name is the tool's registered name.
const Name = "code"

// MaxCode bounds the length of a snippet, in characters.
const MaxCode = 20000

// Tool is the code tool.
type Tool struct{ sb *Sandbox }

// DefaultSandbox is the sandbox of the defaults of tools.code: bwrap from
// PATH, /usr/bin/python3 and /usr/bin/prlimit, 5 s of CPU time, 10 s of
// wall time, 512 MiB of memory (for the whole call, and of address space
// per process), 16 processes, 16 MiB of disk and 4000 bytes of each output
// stream.
func DefaultSandbox() Sandbox {
	return Sandbox{Bwrap: "bwrap", Python: "/usr/bin/python3", Prlimit: "/usr/bin/prlimit",
		Limits: Limits{CPU: 5 * time.Second, Wall: 10 * time.Second, MemoryMB: 512, Processes: 16, DiskMB: 16, MaxOutput: 4000}}
}

// New builds the tool over sb. It checks that every limit is positive,
// that bwrap, the interpreter and prlimit exist (and setpriv as root),
// finds where each call's memory cgroup can be made, and runs an empty program
// in the sandbox, so that a machine where it cannot work (user namespaces
// disabled, say) is reported before training starts.
func New(sb Sandbox) (*Tool, error) {
	if err := sb.Limits.check(); err != nil {
		return nil, fmt.Errorf("code: %w", err)
	}
	bwrap, err := exec.LookPath(sb.Bwrap)
	if err != nil {
		return nil, fmt.Errorf("code: the sandbox needs bubblewrap (apt-get install bubblewrap, or make deps): %w", err)
	}
	sb.Bwrap = bwrap
	if sb.memory, err = findMemoryCgroups(); err != nil {
		return nil, fmt.Errorf("code: memory_mb holds for the whole call through a memory cgroup of its own, and none can be made here "+
			"(run as root, or where cgroup v2 hands the memory controller to this process's cgroup): %w", err)
	}
	if os.Geteuid() == 0 {
		if sb.setpriv, err = exec.LookPath("setpriv"); err != nil {
			return nil, fmt.Errorf("code: as root the sandbox runs as nobody through util-linux setpriv: %w", err)
		}
	}
	for _, p := range []string{sb.Python, sb.Prlimit} {
		if !strings.HasPrefix(p, "/usr/") {
			return nil, fmt.Errorf("code: %s is not under /usr, the only host folder the sandbox sees", p)
		}
		if _, err := exec.LookPath(p); err != nil {
			return nil, fmt.Errorf("code: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), sb.Limits.Wall)
	defer cancel()
	out, err := sb.Run(ctx, "pass")
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("%s", render(out, sb.Limits))
	}
	if err != nil {
		return nil, fmt.Errorf("code: the sandbox does not work here: %w", err)
	}
	return &Tool{sb: &sb}, nil
}

// Name returns "code".
func (*Tool) Name() string { return Name }

// Description tells the model what the tool does.
func (t *Tool) Description() string {
	l := t.sb.Limits
	return fmt.Sprintf("Run a Python 3 program and return what it prints (stdout, then stderr). "+
		"No network, no files kept between calls, %s of CPU, %d MB of memory; output beyond %d characters is cut.",
		l.CPU, l.MemoryMB, l.MaxOutput)
}

// Parameters is the JSON schema of the arguments: {"code": string}.
func (*Tool) Parameters() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"code":{"type":"string",`+
		`"description":"the Python program; print the result","minLength":1,"maxLength":%d}},`+
		`"required":["code"],"additionalProperties":false}`, MaxCode))
}

// Call runs args.code. The result is the program's stdout, then its
// stderr under "[stderr]", then "[memory limit 512 MB reached: a process
// was killed]" when the call's memory cgroup killed one, then how it ended
// when it did not exit with status 0 ("[exit status 1]", "[killed by
// signal: killed]", "[wall time limit 10s reached]"); OK only for status 0
// with nothing killed. A sandbox that cannot start
// is a Failure.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (envs.Result, error) {
	var in struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return envs.Result{}, fmt.Errorf("code: bad arguments %s: %w", args, err)
	}
	out, err := t.sb.Run(ctx, in.Code)
	if err != nil {
		if ctx.Err() != nil {
			return envs.Result{}, ctx.Err()
		}
		return envs.Result{}, envs.Failure(err)
	}
	return envs.Result{Content: render(out, t.sb.Limits), OK: out.ExitCode == 0 && !out.WallTimeout && !out.MemoryLimit}, nil
}

// render is the text the model sees.
func render(out Output, l Limits) string {
	var parts []string
	if out.Stdout != "" {
		parts = append(parts, strings.TrimRight(out.Stdout, "\n"))
	}
	if out.Stderr != "" {
		parts = append(parts, "[stderr]\n"+strings.TrimRight(out.Stderr, "\n"))
	}
	if out.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("[%d bytes of output cut]", out.Dropped))
	}
	if out.MemoryLimit {
		parts = append(parts, fmt.Sprintf("[memory limit %d MB reached: a process was killed]", l.MemoryMB))
	}
	switch {
	case out.WallTimeout:
		parts = append(parts, fmt.Sprintf("[wall time limit %s reached]", l.Wall))
	case out.Signal != "":
		parts = append(parts, "[killed by signal: "+out.Signal+"]")
	case out.ExitCode != 0:
		parts = append(parts, fmt.Sprintf("[exit status %d]", out.ExitCode))
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	return strings.Join(parts, "\n")
}

// check reports the first limit that is not positive.
func (l Limits) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"CPU", l.CPU}, {"Wall", l.Wall}} {
		if d.v <= 0 {
			return fmt.Errorf("limit %s is %s, want a positive duration", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"MemoryMB", l.MemoryMB}, {"Processes", l.Processes}, {"DiskMB", l.DiskMB}, {"MaxOutput", l.MaxOutput}} {
		if n.v < 1 {
			return fmt.Errorf("limit %s is %d, want at least 1", n.name, n.v)
		}
	}
	return nil
}
