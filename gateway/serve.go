package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// CheckAddress refuses to serve beyond the loopback interface without an
// API key: host must be a loopback address (or "localhost") unless apiKey
// is set.
func CheckAddress(host, apiKey string) error {
	if apiKey != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("serving on %q reaches beyond this machine: give an API key (--api-key or AGENTRL_API_KEY) that clients must send, or serve on 127.0.0.1", host)
}

// Serve answers h on ln until ctx ends, decoding on the calling goroutine
// (it must own the scheduler's decoder); then it stops accepting, cancels the
// requests in flight and returns.
func Serve(ctx context.Context, sched *Scheduler, h http.Handler, ln net.Listener) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		served <- err
		cancel()
	}()
	sched.Run(ctx)
	shut, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	srv.Shutdown(shut)
	return <-served
}
