// Package code is the "code" tool: it runs a Python snippet in a
// bubblewrap sandbox with CPU-time, memory, process, disk and wall-time
// limits, no network and a throwaway filesystem, and returns its output,
// truncated.
package code

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// Name is the tool's registered name.
const Name = "code"

// MaxCode bounds the length of a snippet, in characters.
const MaxCode = 20000

func init() { envs.Register(Name, New) }

// Tool is the code tool.
type Tool struct{ sb *Sandbox }

// Defaults of the configuration keys.
var defaults = Sandbox{Bwrap: "bwrap", Python: "/usr/bin/python3", Prlimit: "/usr/bin/prlimit",
	Limits: Limits{CPU: 5 * time.Second, Wall: 10 * time.Second, MemoryMB: 512, Processes: 16, DiskMB: 16, MaxOutput: 4000}}

// configKeys are the keys New understands.
var configKeys = []string{"bwrap", "python", "cpu_time", "wall_time", "memory_mb", "processes", "disk_mb", "max_output"}

// New builds the tool from its configuration: "bwrap", "python" (paths),
// "cpu_time" and "wall_time" (durations, or seconds as numbers),
// "memory_mb", "processes", "disk_mb" and "max_output" (bytes of stdout
// and of stderr each), with the defaults above for keys not given. It
// checks that bwrap, the interpreter and prlimit exist, and runs an empty
// program in the sandbox, so that a machine where it cannot work (user
// namespaces disabled, say) is reported before training starts.
func New(cfg map[string]any) (envs.Tool, error) {
	sb := defaults
	for k, v := range cfg {
		var err error
		switch k {
		case "bwrap":
			sb.Bwrap, err = str(v)
		case "python":
			sb.Python, err = str(v)
		case "cpu_time":
			sb.Limits.CPU, err = duration(v)
		case "wall_time":
			sb.Limits.Wall, err = duration(v)
		case "memory_mb":
			sb.Limits.MemoryMB, err = positive(v)
		case "processes":
			sb.Limits.Processes, err = positive(v)
		case "disk_mb":
			sb.Limits.DiskMB, err = positive(v)
		case "max_output":
			sb.Limits.MaxOutput, err = positive(v)
		default:
			err = fmt.Errorf("unknown key (known: %s)", strings.Join(configKeys, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("code: %s: %w", k, err)
		}
	}
	bwrap, err := exec.LookPath(sb.Bwrap)
	if err != nil {
		return nil, fmt.Errorf("code: the sandbox needs bubblewrap (apt-get install bubblewrap, or make deps): %w", err)
	}
	sb.Bwrap = bwrap
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
// stderr under "[stderr]", then how it ended when it did not exit with
// status 0 ("[exit status 1]", "[killed by signal: killed]", "[wall time
// limit 10s reached]"); OK only for status 0. A sandbox that cannot start
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
	return envs.Result{Content: render(out, t.sb.Limits), OK: out.ExitCode == 0 && !out.WallTimeout}, nil
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

func str(v any) (string, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", fmt.Errorf("want a non-empty string, got %v", v)
	}
	return s, nil
}

// duration accepts a time.Duration, a duration string ("5s") or a number
// of seconds.
func duration(v any) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case time.Duration:
		d = x
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, err
		}
	case int:
		d = time.Duration(x) * time.Second
	case float64:
		d = time.Duration(x * float64(time.Second))
	default:
		return 0, fmt.Errorf("want a duration, got %v", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("want a positive duration, got %s", d)
	}
	return d, nil
}

// positive accepts a whole number >= 1 in the forms YAML and JSON produce.
func positive(v any) (int, error) {
	var n int
	switch x := v.(type) {
	case int:
		n = x
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<31 {
			return 0, fmt.Errorf("want a whole number, got %v", v)
		}
		n = int(x)
	default:
		return 0, fmt.Errorf("want a whole number, got %v", v)
	}
	if n < 1 {
		return 0, fmt.Errorf("want at least 1, got %d", n)
	}
	return n, nil
}
