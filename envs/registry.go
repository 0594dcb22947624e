package envs

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Factory builds a tool from its configuration section (nil when the
// configuration has none).
type Factory func(cfg map[string]any) (Tool, error)

// Registry maps tool names to factories, so a configuration can pick its
// tools by name.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{factories: map[string]Factory{}}
}

// DefaultRegistry is the registry tool packages add themselves to from
// their init function, as database/sql drivers do.
var DefaultRegistry = NewRegistry()

// Register adds a factory to DefaultRegistry.
func Register(name string, factory Factory) { DefaultRegistry.Register(name, factory) }

// Build builds tools from DefaultRegistry.
func Build(names []string, cfg map[string]map[string]any) ([]Tool, error) {
	return DefaultRegistry.Build(names, cfg)
}

// Register adds the factory of the tool called name. Like sql.Register it
// panics when name is empty, factory is nil or name is already taken: these
// are programming errors in a tool package's init, not bad input.
func (r *Registry) Register(name string, factory Factory) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == "" || factory == nil {
		panic(fmt.Sprintf("envs: Register(%q) with an empty name or a nil factory", name))
	}
	if _, dup := r.factories[name]; dup {
		panic(fmt.Sprintf("envs: tool %q registered twice", name))
	}
	r.factories[name] = factory
}

// Names lists the registered tool names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Build builds the named tools, in order, each from its section of cfg
// (keyed by tool name). It fails on an unknown or repeated name, on a
// configuration section for a tool that is not registered (a typo), on a
// factory error, and on a tool whose Name differs from its registered name
// or whose parameters are not a schema the validator supports.
func (r *Registry) Build(names []string, cfg map[string]map[string]any) ([]Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	known := func() string {
		list := make([]string, 0, len(r.factories))
		for n := range r.factories {
			list = append(list, n)
		}
		slices.Sort(list)
		return strings.Join(list, ", ")
	}
	for n := range cfg {
		if _, ok := r.factories[n]; !ok {
			return nil, fmt.Errorf("tool config names unknown tool %q (known: %s)", n, known())
		}
	}
	tools := make([]Tool, 0, len(names))
	for i, name := range names {
		factory, ok := r.factories[name]
		if !ok {
			return nil, fmt.Errorf("unknown tool %q (known: %s)", name, known())
		}
		if slices.Contains(names[:i], name) {
			return nil, fmt.Errorf("tool %q listed twice", name)
		}
		t, err := factory(cfg[name])
		if err != nil {
			return nil, fmt.Errorf("build tool %q: %w", name, err)
		}
		if err := checkTool(t); err != nil {
			return nil, fmt.Errorf("build tool %q: %w", name, err)
		}
		if t.Name() != name {
			return nil, fmt.Errorf("build tool %q: the tool calls itself %q", name, t.Name())
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// checkTool checks that t is non-nil, named, and has a supported
// parameters schema.
func checkTool(t Tool) error {
	if t == nil {
		return fmt.Errorf("nil tool")
	}
	if t.Name() == "" {
		return fmt.Errorf("tool has an empty name")
	}
	if _, err := compileParameters(t.Parameters()); err != nil {
		return fmt.Errorf("tool %s: parameters %w", t.Name(), err)
	}
	return nil
}
