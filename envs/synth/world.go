// Package synth generates small synthetic worlds for CPU-scale multi-hop
// experiments: made-up people, cities, countries and companies linked by
// relations, one short passage per entity, and questions of 1 to 4 hops
// whose answer can only be reached by searching for one entity after
// another. Config.Relations picks the basic six relations or the rich
// fourteen (schema.go). Everything is drawn from Config.Seed, so a seed
// names a world. Fresh (fresh.go) draws many worlds of one shape whose
// names come from one fixed Pool (pool.go): one vocabulary, and answers
// that differ from world to world.
package synth

import (
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/search"
)

// Kind is the type of an entity.
type Kind string

// The kinds of entities.
const (
	Person  Kind = "person"
	City    Kind = "city"
	Country Kind = "country"
	Company Kind = "company"
)

// relation is a functional link from an entity of one kind to one of
// another: every entity of kind from has exactly one.
type relation struct {
	name     string // key in Entity.Links
	from, to Kind
	noun     string // how a question names it: "the <noun> of X"
	sentence string // how a passage states it: fmt pattern over (subject, object)
}

// The basic relations, and their sentences in passages.
var (
	bornIn    = relation{"born_in", Person, City, "birthplace", "%s was born in %s."}
	worksFor  = relation{"works_for", Person, Company, "employer", "%s works for %s."}
	locatedIn = relation{"located_in", City, Country, "nation", "%s is a city in %s."}
	capital   = relation{"capital", Country, City, "capital", "%s is ruled from %s."}
	basedIn   = relation{"based_in", Company, City, "headquarters", "%s is a company in %s."}
	foundedBy = relation{"founded_by", Company, Person, "founder", "%s was founded by %s."}
)

// The rich world's eight more relations, two from every kind.
var (
	livesIn = relation{"lives_in", Person, City, "home", "%s lives in %s."}
	mentor  = relation{"mentor", Person, Person, "mentor", "%s learned from %s."}
	mayor   = relation{"mayor", City, Person, "mayor", "%s is led by %s."}
	twin    = relation{"twin", City, City, "twin", "%s is paired with %s."}
	leader  = relation{"leader", Country, Person, "leader", "%s is governed by %s."}
	ally    = relation{"ally", Country, Country, "ally", "%s trades with %s."}
	owner   = relation{"owner", Company, Company, "owner", "%s belongs to %s."}
	chief   = relation{"chief", Company, Person, "chief", "%s is run by %s."}
)

// attribute is a word-valued property of every entity of a kind.
type attribute struct {
	kind     Kind
	noun     string   // how a question names it
	sentence string   // fmt pattern over (subject, value)
	values   []string // what it can be
}

// The attributes; countries have none.
var (
	job        = attribute{Person, "job", "%s is a %s.", jobs}
	landmark   = attribute{City, "landmark", "%s has an old %s.", landmarks}
	product    = attribute{Company, "product", "%s makes %s.", products}
	attributes = []attribute{job, landmark, product}
)

// Entity is one thing in the world.
type Entity struct {
	Name  string
	Kind  Kind
	Trait string            // the value of the kind's attribute ("" for countries)
	Links map[string]string // relation name -> name of the related entity
}

// World is a generated world: its entities, one passage per entity (title =
// entity name), and questions split into train, validation (when
// Config.ValQuestions asks for it) and test, plus the
// out-of-domain questions (OOD) when Config.OODQuestions asks for them. The split is by
// question: no question (no chain of relations from a start entity) is in
// both, but the entities and passages are shared, so a test question asks
// something new about entities that train questions also mention. Index
// all of Passages for both.
type World struct {
	Config   Config
	Entities []Entity
	Passages []search.Passage
	Train    []envs.Task
	Val      []envs.Task // validation questions, for choices made before Test is read
	Test     []envs.Task
	OOD      []envs.Task      // questions of a held-out composition; none in Train or Test
	schema   *schema          // the relations and words of Config.Relations
	chains   map[string]chain // task ID -> how it is answered
	byName   map[string]int   // entity name -> index in Entities
}

// Passage returns the passage titled title (an entity's name).
func (w *World) Passage(title string) (search.Passage, bool) {
	i, ok := w.byName[title]
	if !ok {
		return search.Passage{}, false
	}
	return w.Passages[i], true
}
