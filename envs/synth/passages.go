package synth

import (
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs/tools/search"
)

// passage writes an entity's passage: two or three short sentences, the
// kind first, then one for each of the schema's further relations.
//
//	person:  "X is a painter. X was born in C. X works for M."
//	city:    "C is a city in K. C has an old bridge."
//	country: "K is a country. K is ruled from C."
//	company: "M is a company in C. M was founded by X. M makes ships."
//	rich:    "... X lives in C. X learned from Y."
func passage(e Entity, sc *schema) search.Passage {
	var s []string
	switch e.Kind {
	case Person:
		s = append(s, attr(e, job), rel(e, bornIn), rel(e, worksFor))
	case City:
		s = append(s, rel(e, locatedIn), attr(e, landmark))
	case Country:
		s = append(s, e.Name+" is a country.", rel(e, capital))
	case Company:
		s = append(s, rel(e, basedIn), rel(e, foundedBy), attr(e, product))
	}
	for _, r := range sc.more {
		if r.from == e.Kind {
			s = append(s, rel(e, r))
		}
	}
	return search.Passage{Title: e.Name, Text: strings.Join(s, " ")}
}

// rel states relation r of e.
func rel(e Entity, r relation) string { return fmt.Sprintf(r.sentence, e.Name, e.Links[r.name]) }

// attr states attribute a of e.
func attr(e Entity, a attribute) string { return fmt.Sprintf(a.sentence, e.Name, e.Trait) }
