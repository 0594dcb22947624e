package agent

import (
	"fmt"
	"slices"
	"sync"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/search"
)

// worlds are the search indexes of a fresh-worlds run's worlds: a task
// whose Meta names its world (synth.WorldKey) is played with the agent's
// tools, search and lookup reading that world's index instead of the
// agent's. Safe for concurrent use (the asynchronous rollout role adds
// and drops its batches' worlds while evaluation reads others).
type worlds struct {
	mu sync.Mutex
	m  map[string]*worldTools
}

// worldTools are one world's tools and the index they read.
type worldTools struct {
	tools []envs.Tool
	idx   *search.Index
}

// AddWorld opens the search index of world id (built by
// search.BuildIndex) and makes the tools of the world's tasks: the
// agent's, with search and lookup over it. Adding a world twice is an
// error.
func (a *Agent) AddWorld(id, index string) error {
	idx, err := search.Open(index)
	if err != nil {
		return fmt.Errorf("world %s: %w", id, err)
	}
	tools := slices.Clone(a.Tools)
	for i, t := range tools {
		switch t.Name() {
		case search.SearchName:
			tools[i] = worldTool{search.NewSearchTool(idx, a.searchK), id}
		case search.LookupName:
			tools[i] = worldTool{search.NewLookupTool(idx), id}
		}
	}
	a.worlds.mu.Lock()
	defer a.worlds.mu.Unlock()
	if a.worlds.m[id] != nil {
		idx.Close()
		return fmt.Errorf("world %s added twice", id)
	}
	if a.worlds.m == nil {
		a.worlds.m = map[string]*worldTools{}
	}
	a.worlds.m[id] = &worldTools{tools: tools, idx: idx}
	return nil
}

// worldTool is a tool over world's index: the passages it returns are
// evidence for that world's tasks only (envs.WorldTool).
type worldTool struct {
	envs.Tool
	world string
}

// World names the world whose index the tool reads.
func (t worldTool) World() string { return t.world }

// DropWorld closes world id's index; its tasks can no longer be played.
func (a *Agent) DropWorld(id string) error {
	a.worlds.mu.Lock()
	w := a.worlds.m[id]
	delete(a.worlds.m, id)
	a.worlds.mu.Unlock()
	if w == nil {
		return fmt.Errorf("world %s: not added", id)
	}
	return w.idx.Close()
}

// ToolsFor are the tools task is played with: its world's when its Meta
// names one (an error when that world was not added), else the agent's.
func (a *Agent) ToolsFor(task envs.Task) ([]envs.Tool, error) {
	id := task.Meta[synth.WorldKey]
	if id == "" {
		return a.Tools, nil
	}
	a.worlds.mu.Lock()
	defer a.worlds.mu.Unlock()
	w := a.worlds.m[id]
	if w == nil {
		return nil, fmt.Errorf("task %s: its world %s has no index here (not added, or dropped)", task.ID, id)
	}
	return w.tools, nil
}

// closeWorlds closes every world's index.
func (a *Agent) closeWorlds() {
	a.worlds.mu.Lock()
	defer a.worlds.mu.Unlock()
	for _, w := range a.worlds.m {
		w.idx.Close()
	}
	a.worlds.m = nil
}
