package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/agentrl/agentrl/torch"
)

// onWorker runs f on a fresh device worker after setting the thread count,
// so every libtorch call of a benchmark happens on one locked OS thread.
func onWorker(threads int, f func() error) error {
	w := torch.NewWorker()
	defer w.Close()
	var err error
	w.Do(func() {
		if err = torch.SetThreads(threads); err != nil {
			err = fmt.Errorf("bench: set %d threads: %w", threads, err)
			return
		}
		err = f()
	})
	return err
}

// randomTokens draws n token ids uniformly from [0, vocab).
func randomTokens(r *rand.Rand, n, vocab int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(r.IntN(vocab))
	}
	return out
}
