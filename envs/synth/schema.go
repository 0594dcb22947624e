package synth

import "slices"

// schema is what a world says besides its entities' names: its relations
// (and so its questions' nouns), the other words of its passages, and the
// compositions it holds out for the out-of-domain split.
type schema struct {
	relations []relation // basic's six, then more
	more      []relation // the relations beyond basic's, stated after its sentences
	// passageWords are every word the passage templates use besides names
	// and attribute values (see passages.go).
	passageWords []string
	// heldOut are the compositions that only out-of-domain questions use:
	// one relation followed directly by the other along the chain.
	heldOut [][2]string
}

// basic is the first worlds' schema: six relations, and two compositions
// held out.
//
//	born_in then located_in:  "the nation of the birthplace of X"
//	works_for then based_in:  "the headquarters of the employer of X"
var basic = schema{
	relations: []relation{bornIn, worksFor, locatedIn, capital, basedIn, foundedBy},
	passageWords: []string{"is", "a", "an", "was", "born", "in", "works", "for", "city", "country",
		"company", "founded", "by", "ruled", "from", "has", "old", "makes"},
	heldOut: [][2]string{{bornIn.name, locatedIn.name}, {worksFor.name, basedIn.name}},
}

// rich adds two relations from every kind, so that a world of the same
// size holds more than twice the distinct questions (every entity has more
// facts to ask about), and four more held-out compositions, so that its
// out-of-domain split can be large too.
//
//	lives_in then mayor:    "the mayor of the home of X"
//	owner then chief:       "the chief of the owner of X"
//	mentor then born_in:    "the birthplace of the mentor of X"
//	leader then works_for:  "the employer of the leader of X"
var rich = schema{
	relations: slices.Concat(basic.relations, richMore),
	more:      richMore,
	passageWords: slices.Concat(basic.passageWords, []string{"lives", "learned", "led", "paired", "with",
		"governed", "trades", "belongs", "to", "run"}),
	heldOut: slices.Concat(basic.heldOut, [][2]string{{livesIn.name, mayor.name}, {owner.name, chief.name},
		{mentor.name, bornIn.name}, {leader.name, worksFor.name}}),
}

var richMore = []relation{livesIn, mentor, mayor, twin, leader, ally, owner, chief}

// schemas are the schemas Config.Relations may name ("" is basic).
var schemas = map[string]*schema{"": &basic, "basic": &basic, "rich": &rich}
