package job

import (
	"testing"

	"github.com/agentrl/agentrl/torch/torchtest"
)

func TestMain(m *testing.M) { torchtest.Main(m) }
