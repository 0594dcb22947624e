package gateway_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/torch/torchtest"
)

func TestMain(m *testing.M) { torchtest.Main(m) }

// runEngine drives eng on its own goroutine, locked to an OS thread as the
// decoder requires, until the returned stop is called; stop waits for Run
// to return.
func runEngine(eng *gateway.Engine) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		eng.Run(ctx)
	}()
	return func() { cancel(); <-done }
}
