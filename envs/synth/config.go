package synth

import (
	"fmt"
	"math"
)

// Config sets the size and shape of a world.
type Config struct {
	Seed         int64   // every random choice derives from it
	Entities     int     // number of entities, at least 12 (10% countries, 25% cities, 15% companies, the rest people)
	Questions    int     // number of in-domain questions, train, validation and test together
	MaxHops      int     // questions have 1..MaxHops hops (at most 4), in equal shares
	TestFraction float64 // share of the questions held out for test, in [0, 1)
	// OODQuestions is the number of out-of-domain questions (World.OOD):
	// 2..MaxHops hops, each composing relations in a way that no train or
	// test question does (see heldOut). 0 draws none and leaves the
	// in-domain questions free to use every composition.
	OODQuestions int
	// ValQuestions is the number of validation questions (World.Val),
	// taken from the questions not held out for test, so the training
	// split keeps Questions - test - ValQuestions. 0 leaves the train and
	// test splits exactly as a world without validation has them.
	ValQuestions int
	// Relations names the world's schema: "basic" (or "") for the six
	// relations of the first worlds, "rich" for fourteen (schema.go).
	Relations string
	// AvoidHeldOut keeps the in-domain questions off the held-out
	// compositions even when OODQuestions is 0 (a fresh world that
	// trains, in a run whose out-of-domain questions are drawn in other
	// worlds).
	AvoidHeldOut bool
	// Names, when set, is the pool the entities' names are drawn from
	// (fresh worlds, fresh.go); nil draws names of the world's own.
	Names *Pool
}

// DefaultConfig is a world a small model can learn on a CPU: 200 entities,
// 1000 questions of 1 to 3 hops, a fifth held out.
func DefaultConfig() Config {
	return Config{Seed: 1, Entities: 200, Questions: 1000, MaxHops: 3, TestFraction: 0.2}
}

func (c Config) validate() error {
	switch {
	case c.Entities < 12:
		return fmt.Errorf("synth config: Entities = %d, want at least 12", c.Entities)
	case NameWords(c.Entities, false) > MaxNameWords:
		return fmt.Errorf("synth config: Entities = %d takes more name words than the %d the name generator can draw with none containing "+
			"another (a word per entity, a second per person): at most about %d entities", c.Entities, MaxNameWords, MaxEntities(false))
	case c.Questions < 1:
		return fmt.Errorf("synth config: Questions = %d, want at least 1", c.Questions)
	case c.MaxHops < 1 || c.MaxHops > 4:
		return fmt.Errorf("synth config: MaxHops = %d, want 1 to 4", c.MaxHops)
	case !(c.TestFraction >= 0 && c.TestFraction < 1):
		return fmt.Errorf("synth config: TestFraction = %v, want 0 <= f < 1", c.TestFraction)
	case c.ValQuestions < 0:
		return fmt.Errorf("synth config: ValQuestions = %d, want 0 or more", c.ValQuestions)
	case c.ValQuestions > 0 && c.testCount()+c.ValQuestions >= c.Questions:
		return fmt.Errorf("synth config: ValQuestions = %d with %d test questions leaves no training question of %d", c.ValQuestions, c.testCount(), c.Questions)
	case c.OODQuestions < 0:
		return fmt.Errorf("synth config: OODQuestions = %d, want 0 or more", c.OODQuestions)
	case schemas[c.Relations] == nil:
		return fmt.Errorf("synth config: Relations = %q, want basic or rich", c.Relations)
	case c.Names != nil && !c.Names.fits(c):
		return fmt.Errorf("synth config: the name pool is too small for %d entities (it was drawn for smaller worlds)", c.Entities)
	case c.OODQuestions > 0 && c.MaxHops < 2:
		return fmt.Errorf("synth config: OODQuestions = %d needs MaxHops >= 2 (out-of-domain questions compose two relations), got %d", c.OODQuestions, c.MaxHops)
	}
	return nil
}

// MaxEntities is about the most entities whose names fit in MaxNameWords
// (NameWords: half of a world's entities are people, so 1.5 words each;
// pooled, PoolFactor times that).
func MaxEntities(pooled bool) int {
	n := MaxNameWords * 2 / 3
	if pooled {
		n /= PoolFactor
	}
	return n
}

// kindCounts splits Entities between the kinds.
func (c Config) kindCounts() map[Kind]int {
	countries := max(2, c.Entities/10)
	cities := max(countries+1, c.Entities/4)
	companies := max(2, c.Entities*15/100)
	return map[Kind]int{Country: countries, City: cities, Company: companies, Person: c.Entities - countries - cities - companies}
}

// testCount is how many questions go to test.
func (c Config) testCount() int {
	return int(math.Round(float64(c.Questions) * c.TestFraction))
}
