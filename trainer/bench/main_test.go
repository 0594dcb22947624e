package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// TestMain re-executes the tests with passive OpenMP workers (see
// torch.PassiveOpenMP).
func TestMain(m *testing.M) {
	if err := torch.PassiveOpenMP(); err != nil {
		fmt.Fprintln(os.Stderr, "OMP_WAIT_POLICY:", err)
	}
	os.Exit(m.Run())
}
