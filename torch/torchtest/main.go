// Package torchtest is the TestMain of the packages whose tests run
// libtorch: it re-executes the test binary with passive OpenMP workers
// (see torch.PassiveOpenMP) before running the tests.
package torchtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// Main sets up passive OpenMP workers, runs the tests and exits.
func Main(m *testing.M) {
	if err := torch.PassiveOpenMP(); err != nil {
		fmt.Fprintln(os.Stderr, "OMP_WAIT_POLICY:", err)
	}
	os.Exit(m.Run())
}
