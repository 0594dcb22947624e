package gateway_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/torch/torchtest"
)

func TestMain(m *testing.M) { torchtest.Main(m) }

// runScheduler drives sched on its own goroutine, locked to an OS thread as the
// decoder requires, until the returned stop is called; stop waits for Run
// to return.
func runScheduler(sched *gateway.Scheduler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		sched.Run(ctx)
	}()
	return func() { cancel(); <-done }
}
