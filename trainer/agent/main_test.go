package agent

import (
	"testing"

	"github.com/agentrl/agentrl/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
