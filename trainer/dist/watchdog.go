package dist

import (
	"fmt"
	"sync"
	"time"

	"github.com/agentrl/agentrl/torch"
)

// watchdog is the heartbeat: on its own connection to the store, every
// rank bumps its counter a few times per timeout and checks the others'.
// A rank whose counter stops moving for a whole timeout (it died, or its
// machine did), or a store that stops answering (rank 0 is gone), ends
// the job through onLost, whatever the training loop is doing: a long
// rollout between two collectives cannot hide a dead rank.
type watchdog struct {
	store *torch.KVStore
	rank  int
	quit  chan struct{}
	done  sync.WaitGroup
}

func heartbeatKey(rank int) string { return fmt.Sprintf("agentrl/heartbeat/%d", rank) }
func finishedKey(rank int) string  { return fmt.Sprintf("agentrl/finished/%d", rank) }

func startWatchdog(env Env, timeout time.Duration, onLost func(error)) (*watchdog, error) {
	if env.World == 1 {
		return &watchdog{}, nil
	}
	// world 0: an extra client that does not count as a rank.
	s, err := torch.NewKVStore(env.MasterAddr, env.MasterPort, false, 0, timeout, env.storePrefix())
	if err != nil {
		return nil, fmt.Errorf("rank %d: heartbeat connection: %w", env.Rank, err)
	}
	w := &watchdog{store: s, rank: env.Rank, quit: make(chan struct{})}
	every := min(max(timeout/10, 200*time.Millisecond), 5*time.Second)
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		lastVal := make([]int64, env.World)
		lastSeen := make([]time.Time, env.World)
		now := time.Now()
		for r := range lastSeen {
			lastSeen[r] = now
		}
		storeLost := func(err error) {
			onLost(fmt.Errorf("rank %d: the rendezvous store at %s:%d stopped answering (rank 0, or the launcher serving it, is gone?): %w", env.Rank, env.MasterAddr, env.MasterPort, err))
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if _, err := s.Add(heartbeatKey(env.Rank), 1); err != nil {
				storeLost(err)
				return
			}
			now := time.Now()
			for r := 0; r < env.World; r++ {
				if r == env.Rank {
					continue
				}
				v, err := s.Add(heartbeatKey(r), 0)
				if err != nil {
					storeLost(err)
					return
				}
				if v != lastVal[r] {
					lastVal[r], lastSeen[r] = v, now
					continue
				}
				if gone := now.Sub(lastSeen[r]); gone > timeout {
					if f, err := s.Add(finishedKey(r), 0); err == nil && f > 0 {
						continue // it left cleanly
					}
					onLost(fmt.Errorf("rank %d has not sent a heartbeat for %s (dist.timeout %s): it died or its machine is unreachable", r, gone.Round(time.Second), timeout))
					return
				}
			}
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return w, nil
}

// stop ends the heartbeat and marks this rank as finished.
func (w *watchdog) stop() {
	if w == nil || w.store == nil {
		return
	}
	close(w.quit)
	w.done.Wait()
	_, _ = w.store.Add(finishedKey(w.rank), 1) // best effort: the others stop watching this rank
	w.store.Close()
	w.store = nil
}
