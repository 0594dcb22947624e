package torch

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if err := PassiveOpenMP(); err != nil {
		fmt.Fprintln(os.Stderr, "OMP_WAIT_POLICY:", err)
	}
	os.Exit(m.Run())
}
