package torch

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// defaultPython is the interpreter of scripts/venv.sh torch-2.15's
// environment (torch, transformers).
const defaultPython = "/var/cache/agentrl/venv/torch-2.15/bin/python"

var pythonOnce struct {
	sync.Once
	path, why string
}

// transformersPython returns a Python interpreter that imports torch and
// transformers ($AGENTRL_PYTHON, else the torch-2.15 environment of
// scripts/venv.sh), or skips the test saying why there is none.
func transformersPython(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() {
		py := os.Getenv("AGENTRL_PYTHON")
		if py == "" {
			py = defaultPython
		}
		if out, err := exec.Command(py, "-c", "import torch, transformers").CombinedOutput(); err != nil {
			pythonOnce.why = py + " cannot import torch and transformers (make it with scripts/venv.sh torch-2.15, " +
				"or set AGENTRL_PYTHON): " + err.Error() + " " + string(out)
			return
		}
		pythonOnce.path = py
	})
	if pythonOnce.path == "" {
		t.Skip("no Python with transformers: " + pythonOnce.why)
	}
	return pythonOnce.path
}
