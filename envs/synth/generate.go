package synth

import (
	"fmt"
	"math/rand/v2"
)

// kindOrder is the order entities of each kind are created in.
var kindOrder = []Kind{Country, City, Company, Person}

// Generate builds the world cfg describes. The same cfg always gives the
// same world.
func Generate(cfg Config) (*World, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed))
	w := &World{Config: cfg, schema: schemas[cfg.Relations]}
	if err := w.makeEntities(rng); err != nil {
		return nil, err
	}
	w.link(rng)
	for _, e := range w.Entities {
		w.Passages = append(w.Passages, passage(e, w.schema))
	}
	if err := w.makeQuestions(rng); err != nil {
		return nil, err
	}
	return w, nil
}

// makeEntities names the entities of every kind (people get a given and a
// family name), from Config.Names when it is set, and draws their
// attribute values.
func (w *World) makeEntities(rng *rand.Rand) error {
	names := newNamer(rng, w.schema)
	w.byName = map[string]int{}
	counts := w.Config.kindCounts()
	for _, k := range kindOrder {
		var pooled []string
		if w.Config.Names != nil {
			pooled = w.Config.Names.names(rng, k, counts[k])
		}
		for i := range counts[k] {
			name, err := w.name(names, k, pooled, i)
			if err != nil {
				return err
			}
			e := Entity{Name: name, Kind: k, Links: map[string]string{}}
			for _, a := range attributes {
				if a.kind == k {
					e.Trait = a.values[rng.IntN(len(a.values))]
				}
			}
			w.byName[name] = len(w.Entities)
			w.Entities = append(w.Entities, e)
		}
	}
	return nil
}

// name is the i-th name of kind k: pooled[i] when the names come from a
// pool, else a new word of names (two for a person).
func (w *World) name(names *namer, k Kind, pooled []string, i int) (string, error) {
	if pooled != nil {
		return pooled[i], nil
	}
	name, err := names.word()
	if err != nil || k != Person {
		return name, err
	}
	family, err := names.word()
	return name + " " + family, err
}

// link draws every entity's relations. Each country gets at least one city
// (the first cities go one to each country) and its capital is one of its
// own cities. The schema's relations beyond basic's link an entity to any
// other of their kind, drawn after basic's so that a basic world is the
// same whatever the schema adds.
func (w *World) link(rng *rand.Rand) {
	byKind := map[Kind][]int{}
	for i, e := range w.Entities {
		byKind[e.Kind] = append(byKind[e.Kind], i)
	}
	pick := func(k Kind) string { ids := byKind[k]; return w.Entities[ids[rng.IntN(len(ids))]].Name }
	countries := byKind[Country]
	citiesOf := map[string][]string{}
	for j, c := range byKind[City] {
		country := w.Entities[countries[j%len(countries)]].Name
		if j >= len(countries) {
			country = pick(Country)
		}
		w.Entities[c].Links[locatedIn.name] = country
		citiesOf[country] = append(citiesOf[country], w.Entities[c].Name)
	}
	for _, c := range countries {
		own := citiesOf[w.Entities[c].Name]
		w.Entities[c].Links[capital.name] = own[rng.IntN(len(own))]
	}
	for _, c := range byKind[Company] {
		w.Entities[c].Links[basedIn.name] = pick(City)
		w.Entities[c].Links[foundedBy.name] = pick(Person)
	}
	for _, p := range byKind[Person] {
		w.Entities[p].Links[bornIn.name] = pick(City)
		w.Entities[p].Links[worksFor.name] = pick(Company)
	}
	for i := range w.Entities {
		for _, r := range w.schema.more {
			if r.from != w.Entities[i].Kind {
				continue
			}
			ids := byKind[r.to]
			j := ids[rng.IntN(len(ids))]
			for j == i {
				j = ids[rng.IntN(len(ids))]
			}
			w.Entities[i].Links[r.name] = w.Entities[j].Name
		}
	}
}

// errTooSmall reports a question that could not be drawn.
func errTooSmall(hops, i, n int) error {
	return fmt.Errorf("synth: no new %d-hop question for question %d of %d after %d draws: use more Entities, fewer Questions or a lower MaxHops", hops, i+1, n, maxDraws)
}
