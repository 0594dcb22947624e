// Package dist runs one training job as several data-parallel processes:
// it reads the torchrun environment, launches local workers (trainer train
// --nproc N), joins them in a c10d process group over a TCPStore, watches
// that every rank stays alive, and offers the few collectives the trainer
// needs (gradient all-reduce, gathering trajectories, agreeing on state).
//
// A nil *Group is a single process: its methods are no-ops over one rank,
// so the trainer's code reads the same with and without data parallelism.
package dist

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Env is a rank's place in the job, in torchrun's conventions.
type Env struct {
	Rank       int    // RANK: 0 .. World-1
	World      int    // WORLD_SIZE
	LocalRank  int    // LOCAL_RANK: index on this machine (picks the GPU)
	LocalWorld int    // LOCAL_WORLD_SIZE: ranks on this machine (shares the cores)
	MasterAddr string // MASTER_ADDR: where rank 0 (or the launcher) serves the TCPStore
	MasterPort int    // MASTER_PORT
	// AgentStore is set when the launcher already serves the store at
	// MASTER_ADDR:MASTER_PORT (torchrun's agent: TORCHELASTIC_USE_AGENT_STORE
	// is True), so every rank connects as a client, under a prefix that
	// changes with each restart (TORCHELASTIC_RESTART_COUNT).
	AgentStore   bool
	RestartCount int
}

// FromEnv reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT, as torchrun, Slurm wrappers and Kubernetes
// operators set them. ok is false when RANK and WORLD_SIZE are both unset
// (a plain single process).
func FromEnv() (e Env, ok bool, err error) {
	return parseEnv(os.Getenv)
}

func parseEnv(get func(string) string) (Env, bool, error) {
	if get("RANK") == "" && get("WORLD_SIZE") == "" {
		return Env{}, false, nil
	}
	num := func(key string, def int) (int, error) {
		s := get(key)
		if s == "" {
			if def < 0 {
				return 0, fmt.Errorf("%s is not set (RANK and WORLD_SIZE were: set all of RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or launch with trainer train --nproc N or torchrun)", key)
			}
			return def, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: want a non-negative integer", key, s)
		}
		return n, nil
	}
	var e Env
	var err error
	if e.Rank, err = num("RANK", -1); err != nil {
		return e, true, err
	}
	if e.World, err = num("WORLD_SIZE", -1); err != nil {
		return e, true, err
	}
	if e.World < 1 || e.Rank >= e.World {
		return e, true, fmt.Errorf("RANK=%d with WORLD_SIZE=%d: want 0 <= RANK < WORLD_SIZE", e.Rank, e.World)
	}
	if e.LocalRank, err = num("LOCAL_RANK", e.Rank); err != nil {
		return e, true, err
	}
	if e.LocalWorld, err = num("LOCAL_WORLD_SIZE", max(e.World, e.LocalRank+1)); err != nil {
		return e, true, err
	}
	if e.LocalRank >= e.LocalWorld {
		return e, true, fmt.Errorf("LOCAL_RANK=%d with LOCAL_WORLD_SIZE=%d: want LOCAL_RANK < LOCAL_WORLD_SIZE", e.LocalRank, e.LocalWorld)
	}
	if e.MasterAddr = get("MASTER_ADDR"); e.MasterAddr == "" {
		if e.World > 1 {
			return e, true, fmt.Errorf("MASTER_ADDR is not set: the address where rank 0 serves the rendezvous store")
		}
		e.MasterAddr = "127.0.0.1"
	}
	if e.MasterPort, err = num("MASTER_PORT", 29500); err != nil {
		return e, true, err
	}
	if e.MasterPort < 1 || e.MasterPort > 65535 {
		return e, true, fmt.Errorf("MASTER_PORT=%d: want 1..65535", e.MasterPort)
	}
	e.AgentStore = strings.EqualFold(get("TORCHELASTIC_USE_AGENT_STORE"), "true")
	if e.RestartCount, err = num("TORCHELASTIC_RESTART_COUNT", 0); err != nil {
		return e, true, err
	}
	return e, true, nil
}

// storePrefix is put before every key in a store shared with the launcher,
// as PyTorch's workers do ("/worker/attempt_N"), so a restarted job does
// not read its previous attempt's keys.
func (e Env) storePrefix() string {
	if !e.AgentStore {
		return ""
	}
	return fmt.Sprintf("/worker/attempt_%d", e.RestartCount)
}

// Vars are the environment variables that place a process at e.
func (e Env) Vars() []string {
	return []string{
		"RANK=" + strconv.Itoa(e.Rank),
		"WORLD_SIZE=" + strconv.Itoa(e.World),
		"LOCAL_RANK=" + strconv.Itoa(e.LocalRank),
		"LOCAL_WORLD_SIZE=" + strconv.Itoa(e.LocalWorld),
		"MASTER_ADDR=" + e.MasterAddr,
		"MASTER_PORT=" + strconv.Itoa(e.MasterPort),
	}
}

// loopback reports whether the rendezvous address is this machine's
// loopback, in which case Gloo binds to loopback too.
func (e Env) loopback() bool {
	if e.MasterAddr == "localhost" {
		return true
	}
	ip := net.ParseIP(e.MasterAddr)
	return ip != nil && ip.IsLoopback()
}
