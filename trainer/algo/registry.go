package algo

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/trajectory"
)

// AdvantageFunc fills t.Advantages and t.Returns (len(t.Tokens) each) of
// every trajectory in the batch. kl is nil or holds one per-token KL slice
// per trajectory (same order, len(t.Tokens), nil for none) for the
// KL-in-reward penalty opt.KLCoef*kl_t.
type AdvantageFunc func(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error

// Estimator is an advantage estimator as registered under its name (as in
// verl's ADV_ESTIMATOR_REGISTRY): its function and what it needs from the
// trainer. Each estimator registers itself in its own file's init, so
// adding one is one file.
type Estimator struct {
	// Advantages computes the batch's advantages and returns.
	Advantages AdvantageFunc
	// Critic: the estimator reads t.Values, so the trainer learns a value
	// function (a value head or a separate critic) and fills them.
	Critic bool
	// Groups: the estimator compares the samples of one prompt, so
	// rollout.group_size must be at least 2 (a group of one gives every
	// trajectory advantage 0).
	Groups bool
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Estimator{}
)

// Register makes an estimator available under name. Like sql.Register it
// panics when name is taken or e has no function: both are programming
// errors made at init time, not bad input.
func Register(name string, e Estimator) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if e.Advantages == nil {
		panic("algo: Register estimator " + name + " has no Advantages function")
	}
	if _, dup := registry[name]; dup {
		panic("algo: Register called twice for estimator " + name)
	}
	registry[name] = e
}

// Get returns the estimator registered under name, or an error listing the
// known names.
func Get(name string) (Estimator, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if e, ok := registry[name]; ok {
		return e, nil
	}
	return Estimator{}, fmt.Errorf("unknown advantage estimator %q (known: %s)", name, strings.Join(namesLocked(), ", "))
}

// Names lists the registered estimators in alphabetical order.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
