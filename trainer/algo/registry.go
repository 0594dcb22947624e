package algo

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/trainer/traj"
)

// Estimator fills t.Advantages and t.Returns (len(t.Tokens) each) of every
// trajectory in the batch. kl is nil or holds one per-token KL slice per
// trajectory (same order, len(t.Tokens), nil for none) for the
// KL-in-reward penalty opt.KLCoef*kl_t. Estimators are chosen by name, as
// in verl's ADV_ESTIMATOR_REGISTRY.
type Estimator func(batch []*traj.Trajectory, kl [][]float32, opt Options) error

var (
	registryMu sync.RWMutex
	registry   = map[string]Estimator{}
)

func init() {
	Register("gae", GAE)
	Register("grpo", GRPO)
	Register("rloo", RLOO)
	Register("reinforce_pp", ReinforcePP)
	Register("reinforce_pp_baseline", ReinforcePPBaseline)
}

// Register makes an estimator available under name. Like sql.Register it
// panics when name is taken or e is nil: both are programming errors made
// at init time, not bad input.
func Register(name string, e Estimator) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if e == nil {
		panic("algo: Register estimator " + name + " is nil")
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
	return nil, fmt.Errorf("unknown advantage estimator %q (known: %s)", name, strings.Join(namesLocked(), ", "))
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
