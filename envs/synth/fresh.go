package synth

import (
	"fmt"
	"math/rand/v2"

	"github.com/agentrl/agentrl/envs"
)

// Role is what a fresh world is drawn for. Each role has its own stream of
// world seeds, so no world serves two roles.
type Role uint8

// The roles of fresh worlds.
const (
	RoleTrain Role = iota + 1 // one training batch (one draw of one iteration)
	RoleDemo                  // the warm start's demonstrations
	RoleTest                  // evaluation: test and out-of-domain questions
	RoleVal                   // evaluation: validation questions
	RoleVocab                 // the one world whose texts, renamed from the pool, make the vocabulary
)

// String names the role as world IDs use it.
func (r Role) String() string {
	switch r {
	case RoleTrain:
		return "train"
	case RoleDemo:
		return "demo"
	case RoleTest:
		return "test"
	case RoleVal:
		return "validation"
	case RoleVocab:
		return "vocab"
	}
	return fmt.Sprintf("role%d", uint8(r))
}

// WorldKey is the Meta key of a fresh world's task that names its world:
// the world whose passages, and only those, hold its answer (envs.WorldKey).
const WorldKey = envs.WorldKey

// Fresh draws fresh worlds: every one of Shape's size and schema, with its
// own seed derived from Shape.Seed, its role and its number, and its
// entities named from one fixed Pool, so that all of them share one
// vocabulary while a question's answer differs from world to world.
type Fresh struct {
	shape Config
	pool  *Pool
}

// NewFresh prepares the fresh worlds of shape: Entities, MaxHops and
// Relations shape every world, Seed seeds the streams, and OODQuestions >
// 0 keeps every world's in-domain questions off the held-out compositions
// (the out-of-domain questions themselves are asked of World).
func NewFresh(shape Config) (*Fresh, error) {
	shape.Names = nil
	pool, err := NewPool(shape)
	if err != nil {
		return nil, err
	}
	return &Fresh{shape: shape, pool: pool}, nil
}

// Pool is the pool every world's names come from.
func (f *Fresh) Pool() *Pool { return f.pool }

// Seed is the world seed of world n of role r: drawn from a generator
// seeded by Shape.Seed and the role, at position n, so it names one world
// and the same one on every run and resume.
func (f *Fresh) Seed(r Role, n uint64) int64 {
	return int64(rand.New(rand.NewPCG(uint64(f.shape.Seed), uint64(r)<<56^n)).Uint64() >> 1)
}

// ID names world n of role r ("test-3", "train-12").
func ID(r Role, n uint64) string { return fmt.Sprintf("%s-%d", r, n) }

// World generates world n of role r with questions in-domain questions
// (hops cycling 1..MaxHops) and ood out-of-domain ones. Its in-domain
// questions are all in one split: World.Train for RoleTrain, RoleDemo and RoleVocab,
// World.Test for RoleTest, World.Val for RoleVal; every task's Meta names
// its split and, under WorldKey, the world (ID).
func (f *Fresh) World(r Role, n uint64, questions, ood int) (*World, error) {
	cfg := f.shape
	cfg.Seed, cfg.Questions, cfg.TestFraction, cfg.ValQuestions, cfg.OODQuestions = f.Seed(r, n), questions, 0, 0, ood
	cfg.AvoidHeldOut = f.shape.OODQuestions > 0
	cfg.Names = f.pool
	w, err := Generate(cfg)
	if err != nil {
		return nil, fmt.Errorf("fresh world %s: %w", ID(r, n), err)
	}
	split := "train"
	switch r {
	case RoleTest:
		w.Test, w.Train, split = w.Train, nil, "test"
	case RoleVal:
		w.Val, w.Train, split = w.Train, nil, "validation"
	}
	id := ID(r, n)
	for _, ts := range [][]envs.Task{w.Train, w.Val, w.Test} {
		for i := range ts {
			ts[i].Meta = map[string]string{"split": split, WorldKey: id}
		}
	}
	for i := range w.OOD {
		w.OOD[i].Meta[WorldKey] = id
	}
	return w, nil
}
